package model

import "hash/maphash"

// store holds the states found so far, by id, in chunks: growing it never
// copies what it holds (a doubling slice of millions of states would hold
// the old and the new array at once, half again the memory at the peak).
type store struct {
	chunks [][]State
	n      int
}

const chunkBits = 16

func (st *store) len() int { return st.n }

func (st *store) at(id int32) *State {
	return &st.chunks[id>>chunkBits][id&(1<<chunkBits-1)]
}

// add appends s and returns its id.
func (st *store) add(s *State) int32 {
	if st.n&(1<<chunkBits-1) == 0 {
		st.chunks = append(st.chunks, make([]State, 1<<chunkBits))
	}
	id := int32(st.n)
	*st.at(id) = *s
	st.n++
	return id
}

// stateSet indexes the states found so far: an open-addressing table of
// their ids, so each state is stored once (in the store), not a second
// time as a map key (the large configurations hold millions).
type stateSet struct {
	seed  maphash.Seed
	slots []int32 // id+1; 0 is empty
	n     int
}

func newStateSet() *stateSet {
	return &stateSet{seed: maphash.MakeSeed(), slots: make([]int32, 1<<16)}
}

// find returns the id of s in states, or -1.
func (t *stateSet) find(states *store, s *State) int32 {
	mask := uint64(len(t.slots) - 1)
	for i := maphash.Comparable(t.seed, *s) & mask; ; i = (i + 1) & mask {
		id := t.slots[i]
		if id == 0 {
			return -1
		}
		if *states.at(id - 1) == *s {
			return id - 1
		}
	}
}

// add records that states[id] is present (it must not be yet).
func (t *stateSet) add(states *store, id int32) {
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

func (t *stateSet) put(states *store, slot int32) {
	mask := uint64(len(t.slots) - 1)
	i := maphash.Comparable(t.seed, *states.at(slot - 1)) & mask
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = slot
}
