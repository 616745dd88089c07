package main

import "runtime"

// setProcs sets GOMAXPROCS to procs (> 0; see runner.GeneratorProcs for how the commands choose
// it) and returns a function that restores it.
func setProcs(procs int) (restore func()) {
	if procs <= 0 || procs == runtime.GOMAXPROCS(0) {
		return func() {}
	}
	prev := runtime.GOMAXPROCS(procs)
	return func() { runtime.GOMAXPROCS(prev) }
}
