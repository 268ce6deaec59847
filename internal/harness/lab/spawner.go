package lab

import (
	"os/exec"
	"runtime"
)

// spawner starts child processes from one dedicated OS thread. The kernel
// sends a child's parent-death signal (Pdeathsig) when the thread that forked
// it exits, and the Go runtime destroys threads, e.g. those InNetns locks.
// Forking from a thread locked for the lab's whole life makes "children die
// with the lab process" reliable.
type spawner struct {
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the lab
		for r := range s.reqs {
			r.done <- r.cmd.Start()
		}
	}()
	return s
}

// start runs cmd.Start on the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	s.reqs <- spawnReq{cmd: cmd, done: done}
	return <-done
}

// stop ends the spawner's thread; children with Pdeathsig then get it.
func (s *spawner) stop() { close(s.reqs) }
