package stack

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// Terminate stops a process this one did not start (a -target server):
// SIGTERM, then wait until it has exited. Its usage is read until then and
// the last reading returned, so a flush at shutdown is counted: to its
// exit when it is left a zombie (whose final CPU times /proc still gives),
// else up to the last reading, 50 ms at most before its exit.
func Terminate(pid int, timeout time.Duration) (Usage, error) {
	last, err := ReadUsage(pid)
	if err != nil {
		return Usage{}, err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return last, fmt.Errorf("signal process %d: %w", pid, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		gone, err := exited(pid)
		if err != nil {
			return last, err
		}
		if gone {
			if u, err := ReadUsage(pid); err == nil {
				last.CPUSeconds = max(last.CPUSeconds, u.CPUSeconds)
			}
			return last, nil
		}
		if u, err := ReadUsage(pid); err == nil {
			// A process on its way out may already have released its
			// memory accounting: keep the highest peak seen.
			u.PeakRSSBytes = max(u.PeakRSSBytes, last.PeakRSSBytes)
			last = u
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("process %d did not exit within %s of SIGTERM", pid, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exited is true once pid is gone or a zombie (exited, not yet reaped by
// its parent).
func exited(pid int) (bool, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read stat: %w", err)
	}
	state, err := procState(stat)
	if err != nil {
		return false, err
	}
	return state == "Z" || state == "X", nil
}

// procState is the state field of /proc/<pid>/stat (R, S, D, Z, ...).
func procState(stat []byte) (string, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return "", errors.New("malformed /proc stat")
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) == 0 {
		return "", errors.New("short /proc stat")
	}
	return fields[0], nil
}
