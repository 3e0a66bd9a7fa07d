package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// filesystem returns a fresh directory on the filesystem called name and
// a function that removes it (and unmounts what was mounted for it).
// "dir" is the filesystem of dir; "tmpfs", "xfs" and "ext4" are mounted
// fresh (a 256 MiB tmpfs; a 512 MiB sparse image on dir's filesystem, made
// with mkfs.xfs or mkfs.ext4, journal and defaults, and loop-mounted),
// which needs root.
func filesystem(name, dir string) (string, func(), error) {
	switch name {
	case "dir":
		base, err := os.MkdirTemp(dir, "exactfs-bench-")
		if err != nil {
			return "", nil, err
		}
		return base, func() { os.RemoveAll(base) }, nil
	case "tmpfs", "xfs", "ext4":
		if os.Geteuid() != 0 {
			return "", nil, fmt.Errorf("mounting a fresh %s needs root (or leave it out of -fs)", name)
		}
		top, err := os.MkdirTemp(dir, "exactfs-bench-"+name+"-")
		if err != nil {
			return "", nil, err
		}
		mnt := filepath.Join(top, "mnt")
		if err := os.Mkdir(mnt, 0o700); err != nil {
			os.RemoveAll(top)
			return "", nil, err
		}
		var cmds [][]string
		if name == "tmpfs" {
			cmds = [][]string{{"mount", "-t", "tmpfs", "-o", "size=256m,mode=0700", "tmpfs", mnt}}
		} else {
			img := filepath.Join(top, name+".img")
			mkfs := []string{"mkfs.xfs", "-q", "-f", img}
			if name == "ext4" {
				mkfs = []string{"mkfs.ext4", "-q", "-F", img}
			}
			cmds = [][]string{
				{"truncate", "-s", "512M", img},
				mkfs,
				{"mount", "-o", "loop", img, mnt},
			}
		}
		for _, c := range cmds {
			if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
				os.RemoveAll(top)
				return "", nil, fmt.Errorf("%s: %v: %s", strings.Join(c, " "), err, strings.TrimSpace(string(out)))
			}
		}
		cleanup := func() {
			if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "bench: umount %s: %v: %s (left in place)\n", mnt, err, out)
				return
			}
			os.RemoveAll(top)
		}
		return mnt, cleanup, nil
	}
	return "", nil, fmt.Errorf("unknown filesystem %q (want dir, tmpfs, xfs or ext4)", name)
}

// describeFS names the filesystem of path: its type, device and mount
// options (from /proc/self/mounts, the longest mount point above path).
func describeFS(path string) string {
	var st unix.Statfs_t
	typ := "unknown"
	if unix.Statfs(path, &st) == nil {
		switch uint32(st.Type) {
		case unix.EXT4_SUPER_MAGIC:
			typ = "ext4"
		case unix.XFS_SUPER_MAGIC:
			typ = "xfs"
		case unix.TMPFS_MAGIC:
			typ = "tmpfs"
		case unix.BTRFS_SUPER_MAGIC:
			typ = "btrfs"
		default:
			typ = fmt.Sprintf("fs magic %#x", st.Type)
		}
	}
	dev, opts, best := "", "", ""
	if f, err := os.Open("/proc/self/mounts"); err == nil {
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			fs := strings.Fields(s.Text())
			if len(fs) < 4 {
				continue
			}
			mp := fs[1]
			if (path == mp || strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
				best, dev, opts = mp, fs[0], fs[3]
			}
		}
	}
	journal := ""
	if typ == "ext4" && strings.HasPrefix(dev, "/dev/") {
		if _, err := os.Stat("/proc/fs/jbd2/" + filepath.Base(dev) + "-8"); err != nil {
			journal = ", no journal"
		}
	}
	return fmt.Sprintf("%s%s on %s (%s), mounted at %s with %s", typ, journal, dev, path, best, opts)
}
