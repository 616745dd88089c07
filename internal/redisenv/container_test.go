package redisenv_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// needEngine skips the test, with the reason, when no Docker engine answers.
func needEngine(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers (docker info: %v: %s); container tests skipped", err, out)
	}
	needRedisServer(t) // the offline "host" image is built from the local redis-server
}

func TestContainerSingle(t *testing.T) {
	needEngine(t)
	target := startT(t, redisenv.Config{Backend: redisenv.BackendContainer, Image: redisenv.HostImage})
	if target.Info.Backend != redisenv.BackendContainer || target.Info.Image == "" {
		t.Errorf("Info = %+v, want container with an image", target.Info)
	}
	checkSingle(t, target)
}

func TestContainerCluster(t *testing.T) {
	needEngine(t)
	target := startT(t, redisenv.Config{Backend: redisenv.BackendContainer, Image: redisenv.HostImage,
		Topology: redisenv.TopologyCluster})
	checkCluster(t, target, 3)
}

// TestContainerPasswordInFile is the regression test of issue 14 item 12: the container backend
// passed the generated password as a container argument, which docker inspect shows. Now the
// server reads it from /data/redis.conf, mode 0600, owned by the image's user.
func TestContainerPasswordInFile(t *testing.T) {
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendContainer, Image: redisenv.HostImage})
	checkNoPasswordInContainers(t, target)
}

// checkNoPasswordInContainers fails when docker inspect of a container of target shows the
// password, or when a container's configuration file is not mode 0600 owned by the image's user.
func checkNoPasswordInContainers(t *testing.T, target *redisenv.Target) {
	t.Helper()
	ctx := context.Background()
	for _, addr := range target.Servers() {
		ids, err := exec.CommandContext(ctx, "docker", "ps", "-q", "--filter", "label=limitbench.addr="+addr).Output()
		if err != nil || len(strings.Fields(string(ids))) != 1 {
			t.Fatalf("docker ps for %s: %q, %v; want one container", addr, ids, err)
		}
		id := strings.TrimSpace(string(ids))
		inspect, err := exec.CommandContext(ctx, "docker", "inspect", id).Output()
		if err != nil {
			t.Fatalf("docker inspect %s: %v", id, err)
		}
		if strings.Contains(string(inspect), target.Password) {
			t.Errorf("docker inspect of %s (%s) shows the password", id, addr)
		}
		var got []struct {
			Args   []string
			Config struct {
				User string
				Cmd  []string
			}
		}
		if err := json.Unmarshal(inspect, &got); err != nil || len(got) != 1 {
			t.Fatalf("docker inspect %s: %v", id, err)
		}
		if len(got[0].Config.Cmd) == 0 || !strings.HasSuffix(got[0].Config.Cmd[0], ".conf") {
			t.Errorf("container %s command %q: want the configuration file first", addr, got[0].Config.Cmd)
		}
		// docker cp streams a tar archive: its headers have the modes and owners. Nobody but
		// the image's user may read the file: either the file or its directory is closed to
		// others (a Sentinel rewrites its file with mode 0644, inside the 0700 directory).
		conf := got[0].Config.Cmd[0]
		out, err := exec.CommandContext(ctx, "docker", "cp", id+":"+path.Dir(conf), "-").Output()
		if err != nil {
			t.Fatalf("docker cp %s:%s: %v", id, path.Dir(conf), err)
		}
		wantUID := 0
		if u, _, _ := strings.Cut(got[0].Config.User, ":"); u != "" {
			wantUID, _ = strconv.Atoi(u)
		}
		modes := map[string]*tar.Header{}
		tr := tar.NewReader(bytes.NewReader(out))
		for {
			hdr, err := tr.Next()
			if err != nil {
				break
			}
			modes[strings.TrimSuffix(hdr.Name, "/")] = hdr
		}
		dir, file := modes[path.Base(path.Dir(conf))], modes[path.Base(path.Dir(conf))+"/"+path.Base(conf)]
		if dir == nil || file == nil {
			t.Fatalf("docker cp %s: no %s in %v", path.Dir(conf), conf, modes)
		}
		if file.Uid != wantUID || dir.Uid != wantUID {
			t.Errorf("%s in %s: owners %d (file), %d (directory); want the image user's uid %d", conf, addr, file.Uid, dir.Uid, wantUID)
		}
		if file.Mode&0o077 != 0 && dir.Mode&0o077 != 0 {
			t.Errorf("%s in %s: mode %o in a directory of mode %o: others can read it", conf, addr, file.Mode&0o777, dir.Mode&0o777)
		}
		if !strings.HasSuffix(conf, "sentinel.conf") && file.Mode&0o777 != 0o600 {
			t.Errorf("%s in %s: mode %o, want 600", conf, addr, file.Mode&0o777)
		}
	}
}
