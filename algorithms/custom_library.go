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

// loadedLibrary records, per master (keyed by address, "" for a client that is not a
// cluster's), how many measurements of a Custom hold its function library (users: the trials of
// a hunt's batch run at once, each loading and unloading it) and whether the Custom loaded it
// itself (mine: only then may it delete it). mu is held across a whole load or unload, so that
// the measurements of one Custom never race to load or delete the library.
type loadedLibrary struct {
	mu sync.Mutex
	// at guards the maps: a cluster's masters are loaded at once (forEachMaster).
	at    sync.Mutex
	users map[string]int
	mine  map[string]bool
}

// held returns how many measurements hold the library on addr.
func (l *loadedLibrary) held(addr string) int {
	l.at.Lock()
	defer l.at.Unlock()
	return l.users[addr]
}

// acquired counts one more measurement holding the library on addr, and marks it the Custom's
// own when it loaded it there (mine).
func (l *loadedLibrary) acquired(addr string, count, mine bool) {
	l.at.Lock()
	defer l.at.Unlock()
	if count {
		l.users[addr]++
	}
	if mine {
		l.mine[addr] = true
	}
}

// release counts one measurement fewer holding the library on addr, and returns whether it was
// the last and the Custom loaded the library there (then the caller deletes it).
func (l *loadedLibrary) release(addr string) (deleteIt bool) {
	l.at.Lock()
	defer l.at.Unlock()
	if l.users[addr] > 1 {
		l.users[addr]--
		return false
	}
	delete(l.users, addr)
	mine := l.mine[addr]
	delete(l.mine, addr)
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
// checks that the library registers the spec's function (FUNCTION LIST). With acquire (Prepare
// and Check), the caller holds the library until its Unload, and a master where another
// measurement of this Custom holds it already is left as it is; without (a load again after the
// library was lost), every master is checked and loaded.
func (a *Custom) loadLibrary(ctx context.Context, c redis.UniversalClient, acquire bool) error {
	name := libraryName(a.spec.Source)
	l := &a.loaded
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at.Lock()
	if l.users == nil {
		l.users, l.mine = map[string]int{}, map[string]bool{}
	}
	l.at.Unlock()
	return forEachMaster(ctx, c, func(ctx context.Context, addr string, m redis.Cmdable) error {
		if acquire && l.held(addr) > 0 {
			l.acquired(addr, true, false)
			return nil
		}
		if name != "" {
			libs, err := m.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: name, WithCode: true}).Result()
			if err != nil {
				return err
			}
			for _, lib := range libs {
				if lib.Name != name {
					continue
				}
				if lib.Code != a.spec.Source {
					where := ""
					if addr != "" {
						where = " on " + addr
					}
					return fmt.Errorf("%w: library %s%s differs from %s; limitbench never replaces a library it did not load "+
						"(rename yours in its \"#!lua name=\" line, or unload the one on the server)", ErrLibraryInUse, name, where, a.spec.path())
				}
				if err := registers(ctx, m, name, a.spec.Function); err != nil {
					return err
				}
				l.acquired(addr, acquire, false)
				return nil
			}
		}
		lib, err := m.FunctionLoad(ctx, a.spec.Source).Result()
		if err != nil {
			return err
		}
		l.acquired(addr, false, true)
		if err := registers(ctx, m, lib, a.spec.Function); err != nil {
			return err
		}
		l.acquired(addr, acquire, false)
		return nil
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

// Unload releases the function library a Prepare (or Check) acquired, and removes it from every
// master where the Custom loaded it and no other of its measurements still holds it (FUNCTION
// DELETE of the name on the library's "#!lua name=" line), so that a run leaves no library of its
// own behind and a trial that ends first does not take it from those still running; a library
// that was on the server before is left as it is, and a master that no longer has it is not an
// error. It does nothing for a script (the script cache
// is Redis's to manage).
func (a *Custom) Unload(ctx context.Context, c redis.UniversalClient) error {
	if a.spec.Function == "" {
		return nil
	}
	name := libraryName(a.spec.Source)
	if name == "" {
		return nil // FUNCTION LOAD refused it: nothing was loaded
	}
	l := &a.loaded
	l.mu.Lock()
	defer l.mu.Unlock()
	return forEachMaster(ctx, c, func(ctx context.Context, addr string, m redis.Cmdable) error {
		if !l.release(addr) {
			return nil // another measurement still holds it, or it was not the Custom's to delete
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
		rerr := b.a.loadLibrary(ctx, b.on, false)
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
