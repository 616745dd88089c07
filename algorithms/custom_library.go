package algorithms

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ErrLibraryInUse means a custom function library's name is loaded on the server already with
// other code (a user's library): limitbench neither replaces nor runs it. It wraps ErrBadCustom.
var ErrLibraryInUse = fmt.Errorf("%w: a function library of that name is loaded with other code", ErrBadCustom)

// loadedLibrary records the masters on which a Custom loaded its function library itself (and so
// may delete it), keyed by address ("" for a client that is not a cluster's). It is safe for
// concurrent use.
type loadedLibrary struct {
	mu sync.Mutex
	on map[string]bool
}

func (l *loadedLibrary) mark(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on == nil {
		l.on = map[string]bool{}
	}
	l.on[addr] = true
}

// take returns whether the library was loaded on addr by the Custom, and forgets it.
func (l *loadedLibrary) take(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	mine := l.on[addr]
	delete(l.on, addr)
	return mine
}

// forEachMaster runs do on each master of a *redis.ClusterClient with its address, otherwise on
// c with "".
func forEachMaster(ctx context.Context, c redis.UniversalClient, do func(ctx context.Context, addr string, m redis.Cmdable) error) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return do(ctx, m.Options().Addr, m) })
	}
	return do(ctx, "", c)
}

// loadLibrary makes the spec's function library available on every master of c, without ever
// replacing a library it did not load: a master that has a library of that name with the same
// code keeps it and uses it (Unload leaves it there); one whose library of that name has other
// code is an error wrapping ErrLibraryInUse, naming the library and the master; elsewhere the
// library is loaded with FUNCTION LOAD (not REPLACE) and recorded as the Custom's own. Then it
// checks that the library registers the spec's function (FUNCTION LIST).
func (a *Custom) loadLibrary(ctx context.Context, c redis.UniversalClient) error {
	name := libraryName(a.spec.Source)
	return forEachMaster(ctx, c, func(ctx context.Context, addr string, m redis.Cmdable) error {
		if name != "" {
			libs, err := m.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: name, WithCode: true}).Result()
			if err != nil {
				return err
			}
			for _, l := range libs {
				if l.Name != name {
					continue
				}
				if l.Code != a.spec.Source {
					where := ""
					if addr != "" {
						where = " on " + addr
					}
					return fmt.Errorf("%w: library %s%s differs from %s; limitbench never replaces a library it did not load "+
						"(rename yours in its \"#!lua name=\" line, or unload the one on the server)", ErrLibraryInUse, name, where, a.spec.path())
				}
				return registers(ctx, m, name, a.spec.Function)
			}
		}
		lib, err := m.FunctionLoad(ctx, a.spec.Source).Result()
		if err != nil {
			return err
		}
		a.loaded.mark(addr)
		return registers(ctx, m, lib, a.spec.Function)
	})
}

// registers checks with FUNCTION LIST that library lib on m registers function fn; when it
// does not, the error matches ErrNoFunction and names the functions it does register.
func registers(ctx context.Context, m redis.Cmdable, lib, fn string) error {
	libs, err := m.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: lib}).Result()
	if err != nil {
		return err
	}
	var registered []string
	for _, l := range libs {
		if l.Name != lib {
			continue
		}
		for _, f := range l.Functions {
			if f.Name == fn {
				return nil
			}
			registered = append(registered, f.Name)
		}
	}
	return &noFunctionError{library: lib, function: fn, registered: registered}
}

// ErrNoFunction is matched (errors.Is) by Check's and Prepare's error when a function library
// loads but does not register the function the spec names: the scenario's mistake, not Redis's.
var ErrNoFunction = errors.New("the library does not register the function")

// noFunctionError is a library that does not register function; registered are the functions it
// does register.
type noFunctionError struct {
	library, function string
	registered        []string
}

func (e *noFunctionError) Error() string {
	msg := fmt.Sprintf("library %s registers no function %s", e.library, e.function)
	if len(e.registered) > 0 {
		names := slices.Sorted(slices.Values(e.registered)) // FUNCTION LIST's order varies
		msg += " (it registers " + strings.Join(names, ", ") + ")"
	}
	return msg
}

func (e *noFunctionError) Is(target error) bool { return target == ErrNoFunction }

// Unload removes the function library from every master of c where Prepare (or Check) loaded it
// (FUNCTION DELETE of the name on the library's "#!lua name=" line), so that a run leaves no
// library of its own behind; a library that was on the server before is left as it is, and a
// master that no longer has it is not an error. It does nothing for a script (the script cache
// is Redis's to manage).
func (a *Custom) Unload(ctx context.Context, c redis.UniversalClient) error {
	if a.spec.Function == "" {
		return nil
	}
	name := libraryName(a.spec.Source)
	if name == "" {
		return nil // FUNCTION LOAD refused it: nothing was loaded
	}
	return forEachMaster(ctx, c, func(ctx context.Context, addr string, m redis.Cmdable) error {
		if !a.loaded.take(addr) {
			return nil
		}
		err := m.FunctionDelete(ctx, name).Err()
		if err != nil && strings.Contains(err.Error(), "Library not found") {
			return nil
		}
		return err
	})
}

// library is a custom algorithm's function library as one limiter loaded it.
type library struct {
	a  *Custom
	on redis.UniversalClient
	// gen counts the loads since the first; mu serialises them.
	mu  sync.Mutex
	gen atomic.Uint64
}

// after returns what passes a call's decision and error through, having loaded the library again
// on every master when the error says the function is gone (a restart, FUNCTION FLUSH), unless a
// load since gen (the load generation when the call was sent) already did. The call keeps its
// error; a failed load is added to it.
func (b *library) after(gen uint64) func(Decision, error) (Decision, error) {
	return func(d Decision, err error) (Decision, error) {
		if err == nil || !strings.Contains(err.Error(), "Function not found") {
			return d, err
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.gen.Load() != gen {
			return d, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), reloadTimeout)
		defer cancel()
		rerr := b.a.loadLibrary(ctx, b.on)
		b.gen.Add(1)
		if rerr != nil {
			return d, fmt.Errorf("%w (loading the function library again failed: %w)", err, rerr)
		}
		return d, err
	}
}

// libraryName returns the library name that src's first line gives ("#!lua name=mylib"), or ""
// when it gives none.
func libraryName(src string) string {
	line, _, _ := strings.Cut(src, "\n")
	if !strings.HasPrefix(line, "#!") {
		return ""
	}
	for _, f := range strings.Fields(line)[1:] {
		if v, ok := strings.CutPrefix(f, "name="); ok {
			return v
		}
	}
	return ""
}
