// Package version says which limitbench a binary is: its module version, the commit it was built
// from, that commit's date, the Go toolchain and the platform. `limitbench version` prints it and
// every result.json records it.
//
// A release sets the values at link time (.goreleaser.yaml, the Makefile):
//
//	go build -ldflags "-X github.com/limitbench/limitbench/internal/version.version=v1.2.3
//	  -X github.com/limitbench/limitbench/internal/version.commit=<full hash>
//	  -X github.com/limitbench/limitbench/internal/version.date=2026-01-02T03:04:05Z"
//
// The date is the commit's, not the clock's at build time, so that one tag always builds the same
// bytes. Without link-time values Get reads what the Go toolchain recorded
// (runtime/debug.ReadBuildInfo): the module version `go install ...@v1.2.3` built, and the
// vcs.revision, vcs.time and vcs.modified settings of a build inside a git checkout (absent with
// -buildvcs=false, and from a module the proxy served).
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// The link-time values; empty unless -ldflags "-X ..." set them.
var (
	version string
	commit  string
	date    string
)

// Devel is the version of a binary that knows none: built from a checkout with no link-time
// version (`go build`, `go run`).
const Devel = "devel"

// Info is one binary's identity. Fields it cannot know are empty, except Version (Devel then),
// GoVersion and Platform.
type Info struct {
	// Version is the release's version ("v1.2.3"), the module version go install recorded
	// (a tag or a pseudo-version), or Devel.
	Version string `json:"version"`
	// Commit is the full hash of the commit the binary was built from.
	Commit string `json:"commit,omitempty"`
	// Modified is true when the tree had uncommitted changes (vcs.modified).
	Modified bool `json:"modified,omitempty"`
	// Date is the commit's time, RFC 3339 in UTC.
	Date string `json:"date,omitempty"`
	// GoVersion is the toolchain that built the binary (runtime.Version()).
	GoVersion string `json:"go_version"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get returns this binary's Info: the link-time values where set, what the build information
// records for the rest.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(bi, version, commit, date)
}

// fromBuild is Get for the build information bi (nil: none) and the link-time values ver, rev
// and when.
func fromBuild(bi *debug.BuildInfo, ver, rev, when string) Info {
	info := Info{
		Version:   ver,
		Commit:    rev,
		Date:      when,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if v := bi.Main.Version; info.Version == "" && v != "" && v != "(devel)" {
			info.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.time":
				if info.Date == "" {
					info.Date = s.Value
				}
			case "vcs.modified":
				info.Modified = info.Modified || s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = Devel
	}
	return info
}

// Short is the version in one word, as result.json's harness_version records it: Version, and
// for a Devel build the commit's first 12 hex digits ("devel-0123456789ab"), "-dirty" when
// Modified.
func (i Info) Short() string {
	s := i.Version
	if s == Devel && i.Commit != "" {
		s += "-" + i.Commit[:min(12, len(i.Commit))]
	}
	if i.Modified && !strings.HasSuffix(s, "-dirty") && !strings.Contains(s, "+dirty") {
		s += "-dirty"
	}
	return s
}

// String is what `limitbench version` prints: the version on the first line, then one line for
// each of commit, date, Go version and platform ("unknown" for what the binary does not know).
func (i Info) String() string {
	unknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	rev := unknown(i.Commit)
	if i.Modified {
		rev += " (uncommitted changes)"
	}
	return fmt.Sprintf("limitbench %s\ncommit   %s\ndate     %s\ngo       %s\nplatform %s\n",
		i.Version, rev, unknown(i.Date), i.GoVersion, i.Platform)
}
