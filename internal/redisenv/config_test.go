package redisenv_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/internal/redisenv"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  redisenv.Config
		want []string // substrings of the error; nil means valid
	}{
		{"zero value", redisenv.Config{}, nil},
		{"process cluster", redisenv.Config{Backend: "process", Topology: "cluster", Masters: 5, Replicas: 1}, nil},
		{"external url", redisenv.Config{Backend: "external", URL: "redis://u:p@127.0.0.1:7000/2"}, nil},
		{"external tls", redisenv.Config{Backend: "external", URL: "rediss://u:p@localhost:7000"}, nil},
		{"external seeds", redisenv.Config{Backend: "external", Topology: "cluster", URL: "127.0.0.1:7000, 127.0.0.1:7001"}, nil},
		{"seed URL with credentials", redisenv.Config{Backend: "external", Topology: "cluster", URL: "redis://u:p@127.0.0.1:7000,127.0.0.1:7001"}, nil},
		{"TLS seed URL", redisenv.Config{Backend: "external", Topology: "cluster", URL: "rediss://u:p@a.example:7000,b.example,[::1]:7002/0"}, nil},
		{"bad seed in a URL", redisenv.Config{Backend: "external", URL: "redis://u:p@127.0.0.1:7000,127.0.0.1:x"}, []string{`seed "127.0.0.1:x"`}},
		{"empty seed in a URL", redisenv.Config{Backend: "external", URL: "redis://u:p@127.0.0.1:7000,"}, []string{"seed"}},
		{"unknown backend", redisenv.Config{Backend: "docker"}, []string{`unknown backend "docker"`}},
		{"unknown topology", redisenv.Config{Topology: "ring"}, []string{`unknown topology "ring"`}},
		{"masters 0 single is default", redisenv.Config{Masters: 0}, nil},
		{"masters 2 cluster", redisenv.Config{Topology: "cluster", Masters: 2}, []string{"at least 3 masters"}},
		{"masters negative", redisenv.Config{Topology: "cluster", Masters: -1}, []string{"masters must be between"}},
		{"masters on single", redisenv.Config{Masters: 3}, []string{"topology single has 1 master"}},
		{"replicas on single", redisenv.Config{Replicas: 1}, []string{"replicas need topology cluster"}},
		{"external without url", redisenv.Config{Backend: "external"}, []string{"needs a URL"}},
		{"url without external", redisenv.Config{URL: "redis://127.0.0.1:7000"}, []string{"only used with backend external"}},
		{"malformed url", redisenv.Config{Backend: "external", URL: "redis://u:p@127.0.0.1:notaport"}, []string{"malformed URL"}},
		{"bad scheme", redisenv.Config{Backend: "external", URL: "http://127.0.0.1:7000"}, []string{`scheme "http"`}},
		{"bad db", redisenv.Config{Backend: "external", URL: "redis://127.0.0.1:7000/x"}, []string{"database"}},
		{"unknown URL option", redisenv.Config{Backend: "external", URL: "redis://u:p@127.0.0.1:7000/0?foo=bar"}, []string{`unknown option "foo"`}},
		{"unknown option beside addr", redisenv.Config{Backend: "external", Topology: "cluster", URL: "redis://127.0.0.1:7000?addr=127.0.0.1:7001&dial_timeout=3s"},
			[]string{`unknown option "dial_timeout"`}},
		{"addr option", redisenv.Config{Backend: "external", Topology: "cluster", URL: "redis://127.0.0.1:7000?addr=127.0.0.1:7001"}, nil},
		{"URL fragment", redisenv.Config{Backend: "external", URL: "redis://127.0.0.1:7000#x"}, []string{"fragment"}},
		{"bad seed", redisenv.Config{Backend: "external", URL: "127.0.0.1:7000,localhost"}, []string{`seed address "localhost"`}},
		{"port out of range", redisenv.Config{Backend: "external", URL: "127.0.0.1:70000"}, []string{"bad port"}},
		{"sentinel", redisenv.Config{Backend: "process", Topology: "sentinel"}, nil},
		{"sentinel with replicas", redisenv.Config{Backend: "container", Topology: "sentinel", Replicas: 2, Persistence: "aof-always"}, nil},
		{"sentinel with 2 masters", redisenv.Config{Topology: "sentinel", Masters: 2}, []string{"topology sentinel has 1 master"}},
		{"sentinel external", redisenv.Config{Backend: "external", Topology: "sentinel", URL: "127.0.0.1:7000"},
			[]string{"topology sentinel needs backend process or container"}},
		{"persistence", redisenv.Config{Persistence: "aof-everysec"}, nil},
		{"persistence none on external", redisenv.Config{Backend: "external", URL: "127.0.0.1:7000", Persistence: "none"}, nil},
		{"unknown persistence", redisenv.Config{Persistence: "rdb"}, []string{`unknown persistence "rdb"`}},
		{"persistence on external", redisenv.Config{Backend: "external", URL: "127.0.0.1:7000", Persistence: "aof-always"},
			[]string{"persistence \"aof-always\" applies to servers limitbench starts"}},
		{"all at once", redisenv.Config{Backend: "x", Topology: "y", Replicas: -1},
			[]string{`unknown backend "x"`, `unknown topology "y"`, "replicas must be between"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, redisenv.ErrBadConfig) {
				t.Fatalf("Validate() = %v, want ErrBadConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want it to mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), ":p@") {
				t.Errorf("Validate() = %v shows a password", err)
			}
			// Start reports the same problem without starting anything.
			if _, serr := redisenv.Start(context.Background(), tt.cfg); !errors.Is(serr, redisenv.ErrBadConfig) {
				t.Errorf("Start() = %v, want ErrBadConfig", serr)
			}
		})
	}
}
