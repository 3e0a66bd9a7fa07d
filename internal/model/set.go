package model

import "hash/maphash"

// stateSet indexes the states found so far: an open-addressing table of
// their ids, so each state is stored once (in the caller's slice), not a
// second time as a map key (the large configurations hold millions).
type stateSet struct {
	seed  maphash.Seed
	slots []int32 // id+1; 0 is empty
	n     int
}

func newStateSet() *stateSet {
	return &stateSet{seed: maphash.MakeSeed(), slots: make([]int32, 1<<16)}
}

// find returns the id of s in states, or -1.
func (t *stateSet) find(states []State, s *State) int32 {
	mask := uint64(len(t.slots) - 1)
	for i := maphash.Comparable(t.seed, *s) & mask; ; i = (i + 1) & mask {
		id := t.slots[i]
		if id == 0 {
			return -1
		}
		if states[id-1] == *s {
			return id - 1
		}
	}
}

// add records that states[id] is present (it must not be yet).
func (t *stateSet) add(states []State, id int32) {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]int32, 2*len(old))
		for _, x := range old {
			if x != 0 {
				t.put(states, x)
			}
		}
	}
	t.put(states, id+1)
	t.n++
}

func (t *stateSet) put(states []State, slot int32) {
	mask := uint64(len(t.slots) - 1)
	i := maphash.Comparable(t.seed, states[slot-1]) & mask
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = slot
}
