package algorithms

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// CallMode is how a built-in algorithm's Lua is called: as a script (EVALSHA, the default) or as a
// Redis Function (FCALL) of a function library made of the same Lua.
type CallMode string

const (
	// CallEvalSha calls each script with EVALSHA after SCRIPT LOAD on every master.
	CallEvalSha CallMode = "evalsha"
	// CallFCall calls each script as the function of a library loaded with FUNCTION LOAD REPLACE
	// on every master (see FunctionLibrary).
	CallFCall CallMode = "fcall"
)

// ParseCallMode returns the CallMode named s: "evalsha" or "fcall"; "" is CallEvalSha. Any other
// value is an error naming both.
func ParseCallMode(s string) (CallMode, error) {
	switch CallMode(s) {
	case "", CallEvalSha:
		return CallEvalSha, nil
	case CallFCall:
		return CallFCall, nil
	}
	return "", fmt.Errorf("unknown call %q (known: evalsha, fcall)", s)
}

// Functions is the set of function libraries that built-in algorithms loaded when prepared with a
// context from WithFunctions, so that they can be removed after the measurement (Delete). It is
// safe for concurrent use. The zero value is ready to use.
type Functions struct {
	mu   sync.Mutex
	libs []*script
}

type functionsKey struct{}

// WithFunctions returns ctx made to prepare built-in algorithms as Redis Functions: Prepare with
// it loads each algorithm's Lua as one function library (FunctionLibrary) on every master, its
// Calls send FCALL, and f records the library for Delete. The reference script (Reference) is
// loaded as a function too; custom algorithms are not affected. A nil f returns ctx unchanged
// (EVALSHA).
func WithFunctions(ctx context.Context, f *Functions) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, functionsKey{}, f)
}

// functionsOf returns the Functions of ctx (WithFunctions), or nil.
func functionsOf(ctx context.Context) *Functions {
	f, _ := ctx.Value(functionsKey{}).(*Functions)
	return f
}

func (f *Functions) add(s *script) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.libs = append(f.libs, s)
}

// Libraries returns the names of the libraries loaded so far, in load order (one per Prepare).
func (f *Functions) Libraries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.libs))
	for i, s := range f.libs {
		out[i] = s.lib
	}
	return out
}

// Delete removes every library recorded so far with FUNCTION DELETE on every master of the
// client it was loaded on, and forgets them. A library already gone ("Library not found", say
// after a FUNCTION FLUSH, or deleted by an earlier Prepare's Delete of the same name) is not an
// error; every other error is returned, joined.
func (f *Functions) Delete(ctx context.Context) error {
	f.mu.Lock()
	libs := f.libs
	f.libs = nil
	f.mu.Unlock()
	var errs []error
	done := map[string]bool{}
	for _, s := range libs {
		key := fmt.Sprintf("%p/%s", s.on, s.lib)
		if done[key] {
			continue
		}
		done[key] = true
		err := onEveryMaster(ctx, s.on, func(ctx context.Context, c redis.Cmdable) error {
			err := c.FunctionDelete(ctx, s.lib).Err()
			if err != nil && strings.Contains(err.Error(), "Library not found") {
				return nil
			}
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("delete function library %s: %w", s.lib, err))
		}
	}
	return errors.Join(errs...)
}

// onEveryMaster runs do on each master of a *redis.ClusterClient (ForEachMaster), otherwise on c.
func onEveryMaster(ctx context.Context, c redis.UniversalClient, do func(context.Context, redis.Cmdable) error) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return do(ctx, m) })
	}
	return do(ctx, c)
}

// FunctionLibrary returns the function library limitbench makes of a built-in script's Lua src:
// library limitbench_<fn>, whose one function fn runs src with KEYS and ARGV as its arguments (the
// names the script reads), so that FCALL fn numkeys keys... args... decides as EVALSHA of src
// does. The function has no flags: Redis treats it as one that may write, as it does a script.
func FunctionLibrary(fn, src string) (lib, code string) {
	lib = "limitbench_" + fn
	return lib, "#!lua name=" + lib + "\nredis.register_function('" + fn + "', function(KEYS, ARGV)\n" + src + "\nend)\n"
}

// loadFunction loads src as the function library of fn (FunctionLibrary) with FUNCTION LOAD
// REPLACE on every master of c, records it in f, and returns it as a script whose Calls send
// FCALL fn.
func loadFunction(ctx context.Context, c redis.UniversalClient, f *Functions, fn, src string) (*script, error) {
	lib, code := FunctionLibrary(fn, src)
	s := &script{Script: redis.NewScript(src), on: c, fn: fn, lib: lib, libCode: code}
	if err := s.loadEverywhere(ctx); err != nil {
		return nil, fmt.Errorf("load function library %s: %w", lib, err)
	}
	f.add(s)
	return s, nil
}

// missing reports whether err says the server does not have s: NOSCRIPT for a script, "Function
// not found" for a function.
func (s *script) missing(err error) bool {
	if err == nil || s == nil {
		return false
	}
	if s.fn == "" {
		return redis.HasErrorPrefix(err, "NOSCRIPT")
	}
	return strings.Contains(err.Error(), "Function not found")
}
