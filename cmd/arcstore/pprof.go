package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"
)

// Sampling of -pprof-contention: one blocking event per 10 µs blocked on
// average, one mutex contention event in 10. Enough to see what a request
// waits for under load without measurably slowing it.
const (
	blockProfileRate     = 10_000 // ns
	mutexProfileFraction = 10
)

// recordContention turns on the block and mutex profiles, which the runtime
// leaves off: every channel, select, lock and semaphore wait is then sampled.
func recordContention() {
	runtime.SetBlockProfileRate(blockProfileRate)
	runtime.SetMutexProfileFraction(mutexProfileFraction)
}

// startPprof serves net/http/pprof on its own listener (-pprof-addr), apart
// from the data API: profiles are unauthenticated, can stall the process
// while they run and show memory contents, so the address should be a
// loopback one (reach it with an SSH tunnel or kubectl port-forward).
func startPprof(addr string, log *slog.Logger) (*http.Server, string, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen pprof: %w", err)
	}
	if host, _, err := net.SplitHostPort(lis.Addr().String()); err != nil || !net.ParseIP(host).IsLoopback() {
		log.Warn("pprof is served beyond loopback without authentication; prefer -pprof-addr 127.0.0.1:6060", "addr", lis.Addr().String())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// No WriteTimeout: a CPU profile or trace answers after its ?seconds=.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	log.Info("pprof listening", "addr", lis.Addr().String())
	return srv, lis.Addr().String(), nil
}
