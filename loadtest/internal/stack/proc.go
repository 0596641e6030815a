package stack

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is a started binary whose output goes to a log file.
type Proc struct {
	Name string
	Log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProc runs bin with args, its output appended to dir/name.log.
func StartProc(dir, name, bin string, args ...string) (*Proc, error) {
	return StartProcEnv(dir, name, bin, nil, args...)
}

// StartProcEnv is StartProc with env added to this process's environment.
func StartProcEnv(dir, name, bin string, env []string, args ...string) (*Proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// PID of the process.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM and waits up to timeout for a clean exit, then kills.
func (p *Proc) Stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.exitErr()
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.exitErr()
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not exit within %s of SIGTERM; killed", p.Name, timeout)
	}
}

func (p *Proc) exitErr() error {
	if p.err != nil {
		return fmt.Errorf("%s: %w (log: %s)", p.Name, p.err, p.Log)
	}
	return nil
}

// WaitHTTP waits until url answers 200.
func (p *Proc) WaitHTTP(url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready: %v (log: %s)", p.Name, p.err, p.Log)
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready at %s after %s (log: %s)", p.Name, url, timeout, p.Log)
}

// Usage is a process's resource use at one moment.
type Usage struct {
	CPUSeconds float64 `json:"cpu_seconds"`
	RSSBytes   int64   `json:"rss_bytes"`
	// PeakRSSBytes is the kernel's high-water mark of resident memory
	// (VmHWM), so peaks between samples are not missed.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
}

// ReadUsage reads /proc for pid.
func ReadUsage(pid int) (Usage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, fmt.Errorf("read stat: %w", err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Usage{}, fmt.Errorf("read status: %w", err)
	}
	return parseUsage(stat, status, clockTicks)
}

// clockTicks is USER_HZ, which Linux fixes at 100 for /proc on every
// architecture Go supports.
const clockTicks = 100

func parseUsage(stat, status []byte, ticks float64) (Usage, error) {
	// The command name in field 2 may hold spaces and parentheses; the
	// fields after it start past the last ')'.
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return Usage{}, errors.New("malformed /proc stat")
	}
	fields := strings.Fields(string(stat[end+1:]))
	// utime and stime are fields 14 and 15 of the whole line; fields here
	// start at field 3.
	if len(fields) < 13 {
		return Usage{}, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return Usage{}, fmt.Errorf("parse cpu times: %w", err)
	}
	u := Usage{CPUSeconds: (utime + stime) / ticks}
	for _, line := range strings.Split(string(status), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch key {
		case "VmRSS":
			u.RSSBytes = kib(val)
		case "VmHWM":
			u.PeakRSSBytes = kib(val)
		}
	}
	return u, nil
}

func kib(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
	return n << 10
}

// SelfUsage is the harness's own process: the OTLP driver runs in it.
func SelfUsage() (Usage, error) { return ReadUsage(os.Getpid()) }

// Usage is the process's resource use: read from /proc while it runs, and
// from the kernel's accounting once it has exited, so a final flush at
// shutdown is counted.
func (p *Proc) Usage() (Usage, error) {
	select {
	case <-p.done:
		return exitedUsage(p.cmd.ProcessState), nil
	default:
		return ReadUsage(p.PID())
	}
}

func exitedUsage(ps *os.ProcessState) Usage {
	u := Usage{CPUSeconds: (ps.UserTime() + ps.SystemTime()).Seconds()}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		u.PeakRSSBytes = ru.Maxrss << 10 // KiB on Linux
	}
	return u
}

// CommandUsage is the resource use of a command that has exited.
func CommandUsage(cmd *exec.Cmd) Usage {
	if cmd.ProcessState == nil {
		return Usage{}
	}
	return exitedUsage(cmd.ProcessState)
}
