package measure

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
)

// NewRunID returns a short random id for a run's key prefixes.
func NewRunID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffff)
	}
	return hex.EncodeToString(b[:])
}

// KeyPrefix returns the key prefix of one measurement of algorithm name in run runID:
// "limitbench:<runID>:<name>:<what>:", the name kept usable inside a key prefix (no hash-tag
// braces, no glob characters).
func KeyPrefix(runID, name, what string) string {
	return fmt.Sprintf("limitbench:%s:%s:%s:", runID, keySafe(name), what)
}

// keySafe keeps a name usable inside a key prefix: no hash-tag braces, no glob characters.
func keySafe(name string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '{', '}', '*', '?', '[', ']', '\\', ' ':
			return '_'
		}
		return r
	}, name)
}

// cleanup removes the keys under prefix (Target.CleanupPrefix). On an external server, when that
// fails, it counts the keys left and returns a warning that says how many, where, why and how to
// remove them; nil when every key went, or when the server is one limitbench started (its keys
// go with it).
func cleanup(ctx context.Context, tgt *redisenv.Target, prefix string) *result.Warning {
	err := tgt.CleanupPrefix(ctx, prefix)
	if err == nil || tgt.Info.Backend != redisenv.BackendExternal {
		return nil
	}
	left := map[string]int64{}
	var mu sync.Mutex
	cerr := tgt.ScanPrefix(ctx, prefix, func(_ context.Context, c *redis.Client, keys []string) error {
		mu.Lock()
		left[c.Options().Addr] += int64(len(keys))
		mu.Unlock()
		return nil
	})
	var total int64
	var where, cmds []string
	for _, addr := range slices.Sorted(maps.Keys(left)) {
		total += left[addr]
		where = append(where, fmt.Sprintf("%d on %s", left[addr], addr))
		cmds = append(cmds, removeCommand(tgt, addr, prefix))
	}
	w := &result.Warning{Kind: result.WarningKeysLeft, Prefix: prefix, Keys: total, Remove: strings.Join(cmds, "; ")}
	switch {
	case cerr != nil:
		w.Keys = -1
		for _, a := range tgt.Masters() {
			cmds = append(cmds, removeCommand(tgt, a, prefix))
		}
		w.Remove = strings.Join(cmds, "; ")
		why := fmt.Sprintf("%v, nor counted: %v", err, cerr)
		if cerr.Error() == err.Error() {
			why = err.Error()
		}
		w.Message = fmt.Sprintf("the keys under %s could not be removed (%s); if they are still there, remove them as a user allowed to SCAN and UNLINK, with REDISCLI_AUTH set to its password: %s",
			prefix, why, w.Remove)
	case total == 0:
		return nil // the cleanup failed, then the keys went (they expired)
	default:
		keys := "keys"
		if total == 1 {
			keys = "key"
		}
		w.Message = fmt.Sprintf("%d %s under %s were left behind (%s): %v; remove them as a user allowed to SCAN and UNLINK, with REDISCLI_AUTH set to its password: %s",
			total, keys, prefix, strings.Join(where, ", "), err, w.Remove)
	}
	return w
}

// removeCommand returns a shell command that removes the keys under prefix from the master at
// addr of tgt, as the user USER (a placeholder) whose password is in REDISCLI_AUTH.
func removeCommand(tgt *redisenv.Target, addr, prefix string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, "6379"
	}
	cli := fmt.Sprintf("redis-cli -h %s -p %s --user USER", host, port)
	if tgt.TLS() {
		cli += " --tls"
	}
	if db := tgt.DB(); db != 0 {
		cli += fmt.Sprintf(" -n %d", db)
	}
	pattern := "'" + strings.ReplaceAll(prefix, "'", `'\''`) + "*'"
	return fmt.Sprintf("%s --scan --pattern %s | xargs -r -n 500 %s unlink", cli, pattern, cli)
}
