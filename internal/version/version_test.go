package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const hash = "0123456789abcdef0123456789abcdef01234567"

func TestFromBuild(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	vcs := func(main string, modified bool) *debug.BuildInfo {
		m := "false"
		if modified {
			m = "true"
		}
		return &debug.BuildInfo{
			GoVersion: "go1.26.0",
			Main:      debug.Module{Path: "github.com/limitbench/limitbench", Version: main},
			Settings: []debug.BuildSetting{
				{Key: "-trimpath", Value: "true"},
				{Key: "vcs.revision", Value: hash},
				{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
				{Key: "vcs.modified", Value: m},
			},
		}
	}
	tests := []struct {
		name           string
		bi             *debug.BuildInfo
		ver, rev, when string
		want           Info
		short          string
	}{
		{
			name:  "no build information",
			want:  Info{Version: Devel, GoVersion: runtime.Version(), Platform: platform},
			short: "devel",
		},
		{
			name:  "go build in a checkout",
			bi:    vcs("(devel)", false),
			want:  Info{Version: Devel, Commit: hash, Date: "2026-01-02T03:04:05Z", GoVersion: "go1.26.0", Platform: platform},
			short: "devel-0123456789ab",
		},
		{
			name:  "go build in a checkout with changes",
			bi:    vcs("(devel)", true),
			want:  Info{Version: Devel, Commit: hash, Modified: true, Date: "2026-01-02T03:04:05Z", GoVersion: "go1.26.0", Platform: platform},
			short: "devel-0123456789ab-dirty",
		},
		{
			name:  "go build stamps a pseudo-version",
			bi:    vcs("v0.0.0-20260102030405-0123456789ab+dirty", true),
			want:  Info{Version: "v0.0.0-20260102030405-0123456789ab+dirty", Commit: hash, Modified: true, Date: "2026-01-02T03:04:05Z", GoVersion: "go1.26.0", Platform: platform},
			short: "v0.0.0-20260102030405-0123456789ab+dirty",
		},
		{
			name: "go install from the module proxy: version only",
			bi: &debug.BuildInfo{GoVersion: "go1.26.0",
				Main: debug.Module{Path: "github.com/limitbench/limitbench", Version: "v1.2.3"}},
			want:  Info{Version: "v1.2.3", GoVersion: "go1.26.0", Platform: platform},
			short: "v1.2.3",
		},
		{
			name: "a release: link-time values win",
			bi:   vcs("(devel)", false),
			ver:  "v1.2.3", rev: "fedcba9876543210fedcba9876543210fedcba98", when: "2026-05-06T07:08:09Z",
			want:  Info{Version: "v1.2.3", Commit: "fedcba9876543210fedcba9876543210fedcba98", Date: "2026-05-06T07:08:09Z", GoVersion: "go1.26.0", Platform: platform},
			short: "v1.2.3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromBuild(tt.bi, tt.ver, tt.rev, tt.when)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("fromBuild: (-want +got)\n%s", d)
			}
			if s := got.Short(); s != tt.short {
				t.Errorf("Short() = %q; want %q", s, tt.short)
			}
		})
	}
}

func TestString(t *testing.T) {
	i := Info{Version: "v1.2.3", Commit: hash, Modified: true, Date: "2026-01-02T03:04:05Z", GoVersion: "go1.26.0", Platform: "linux/amd64"}
	want := "limitbench v1.2.3\ncommit   " + hash + " (uncommitted changes)\ndate     2026-01-02T03:04:05Z\ngo       go1.26.0\nplatform linux/amd64\n"
	if got := i.String(); got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	bare := Info{Version: Devel, GoVersion: "go1.26.0", Platform: "linux/amd64"}.String()
	if !strings.Contains(bare, "commit   unknown\ndate     unknown\n") {
		t.Errorf("String() of a build that knows no commit = %q; want commit and date unknown", bare)
	}
}

// TestGet checks that the test binary's own Info is complete where it must be.
func TestGet(t *testing.T) {
	i := Get()
	if i.Version == "" || i.GoVersion == "" || i.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("Get() = %+v; want a version, a Go version and this platform", i)
	}
}
