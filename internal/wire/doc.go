// Package wire is limitbench's own Redis client for the requests that make a run's figures: a
// wire connection (Conn) to a single server on which the load's requests are written and their
// replies read by limitbench itself, not by go-redis. It owns the Redis protocol as limitbench
// speaks it: commands encoded from go-redis argument lists (encode.go), replies read through a
// buffer of its own (reader.go) into the values go-redis's own reader gives (reply.go).
//
// Package load uses it in plain and pipeline mode, where each worker holds a connection of its
// own (load's ownConns, and Supports here). Everything else (preparing the limiters, loading a
// script again after NOSCRIPT, the harness's own checks, clusters, Sentinel, autopipeline) stays
// with go-redis. This departs from DESIGN.md, where go-redis sends every request.
//
// Why: go-redis's request path costs more generator CPU per request than redis-benchmark (a
// pool, hooks, a check for push notifications before every reply, and a reader that reads one
// element at a time), and at pipeline depth 16 about twice as much. BenchmarkLoadgenFloor shows
// that go-redis alone is over the targets of CPU per request, and that a Go client writing and
// reading RESP directly is under them. A wire connection does only that: it writes the commands
// the algorithms' Calls build (their go-redis argument lists, unchanged), reads the replies into
// the same values go-redis's reader gives, and sets them on the Calls' own commands, so that
// every decoder, every error class and the NOSCRIPT handling are the same on both paths. A Conn
// is a go-redis hook for a redis.Conn, and Pipe a go-redis pipeline, so that a Call sends on it
// through the go-redis methods it already uses.
//
// What go-redis would do that a wire connection does too: it dials with the client's Dialer (so
// TLS, a Unix socket and the fault proxies apply), says HELLO with the client's protocol and
// credentials (AUTH after a refused HELLO), selects the client's database, sets read and write
// deadlines from ReadTimeout and WriteTimeout, and after a network error or a reply it cannot
// read closes the connection and dials again at the next request. It never retries a request.
package wire
