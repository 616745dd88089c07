package algorithms

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	// CallFCall calls each script as the function of a library that limitbench loads on every
	// master, under a name of its own (see FunctionLibrary).
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
// context from WithFunctions, so that they can be removed after the measurement (Delete). Its
// libraries and their functions have names that hold a tag drawn at random for this Functions
// (FunctionLibrary), so that they never take the name of a user's library or function, nor of
// another run's: a run replaces and deletes only what it loaded. It is safe for concurrent use.
// The zero value is ready to use.
type Functions struct {
	mu   sync.Mutex
	tag  string // drawn on first use
	libs []*script
}

// Tag returns the random tag in the names of f's libraries and functions: 12 hexadecimal
// digits, drawn on the first call.
func (f *Functions) Tag() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tag == "" {
		var b [6]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
		f.tag = hex.EncodeToString(b[:])
	}
	return f.tag
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

// loaded returns the script f recorded for library lib on c, or nil.
func (f *Functions) loaded(c redis.UniversalClient, lib string) *script {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.libs {
		if s.on == c && s.lib == lib {
			return s
		}
	}
	return nil
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
	return forEachMaster(ctx, c, func(ctx context.Context, _ string, m redis.Cmdable) error { return do(ctx, m) })
}

// FunctionLibrary returns the function library limitbench makes of a built-in script's Lua src,
// named with tag (Functions.Tag): library limitbench_<name>_<tag>, whose one function
// <name>_<tag> runs src with KEYS and ARGV as its arguments (the names the script reads), so
// that FCALL function numkeys keys... args... decides as EVALSHA of src does. The function has no
// flags: Redis treats it as one that may write, as it does a script. Function names are global in
// Redis, so the tag is in both names.
func FunctionLibrary(name, tag, src string) (lib, function, code string) {
	function = name + "_" + tag
	lib = "limitbench_" + function
	return lib, function, "#!lua name=" + lib + "\nredis.register_function('" + function + "', function(KEYS, ARGV)\n" + src + "\nend)\n"
}

// loadFunction loads src as the function library of name (FunctionLibrary, with f's tag) on every
// master of c, records it in f, and returns it as a script whose Calls send FCALL. The first load
// is FUNCTION LOAD without REPLACE, so that a library of that name, which limitbench did not load,
// is refused rather than replaced; a library f loaded already on c is used again.
func loadFunction(ctx context.Context, c redis.UniversalClient, f *Functions, name, src string) (*script, error) {
	lib, function, code := FunctionLibrary(name, f.Tag(), src)
	if s := f.loaded(c, lib); s != nil {
		return s, nil
	}
	s := &script{Script: redis.NewScript(src), on: c, fn: function, lib: lib, libCode: code}
	err := onEveryMaster(ctx, c, func(ctx context.Context, m redis.Cmdable) error {
		return m.FunctionLoad(ctx, code).Err()
	})
	if err != nil {
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
