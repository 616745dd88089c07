package redisenv

import (
	"os"
	"testing"
)

func TestOwnChildRejectsOthers(t *testing.T) {
	for _, pid := range []int{1, os.Getpid(), os.Getppid(), 1 << 30} {
		if err := ownChild(pid); err == nil {
			t.Errorf("ownChild(%d) = nil; want an error: it is not a child of this process", pid)
		}
	}
}
