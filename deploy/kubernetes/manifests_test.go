// Package kubernetes_test checks the manifests of deploy/kubernetes: they parse, the generators
// are an Indexed Job whose pods each run their own segment of one run, the merge step reads
// exactly the directories the generators write, and so does each pod of the sharded merge's
// Indexed Job, whose shard directories its join step reads. Nothing here talks to a cluster.
package kubernetes_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/limitbench/limitbench/scenarios"
)

// The parts of the manifests the test reads.
type (
	object struct {
		APIVersion string                `yaml:"apiVersion"`
		Kind       string                `yaml:"kind"`
		Metadata   struct{ Name string } `yaml:"metadata"`
		Data       map[string]string     `yaml:"data"`
		Spec       jobSpec               `yaml:"spec"`
	}
	jobSpec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    *int   `yaml:"completions"`
		Parallelism    *int   `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				RestartPolicy   string `yaml:"restartPolicy"`
				SecurityContext struct {
					RunAsNonRoot *bool `yaml:"runAsNonRoot"`
					RunAsUser    *int  `yaml:"runAsUser"`
					FSGroup      *int  `yaml:"fsGroup"`
				} `yaml:"securityContext"`
				Containers []container `yaml:"containers"`
				Volumes    []volume    `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	}
	container struct {
		Image string   `yaml:"image"`
		Args  []string `yaml:"args"`
		Env   []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom *struct {
				FieldRef *struct {
					FieldPath string `yaml:"fieldPath"`
				} `yaml:"fieldRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		Resources struct {
			Requests map[string]string `yaml:"requests"`
		} `yaml:"resources"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	volume struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		PersistentVolumeClaim *struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
	}
)

// imageUID is the uid of the user limitbench in the image (deploy/image).
const imageUID = 10001

// load parses every document of every *.yaml file of the directory, strictly.
func load(t *testing.T) map[string]object {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	out := map[string]object{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Strictly: every document is valid YAML (unknown fields are not errors; the structs
		// above read only what the test checks).
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var o object
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Fatalf("%s: a document without apiVersion, kind or metadata.name", f)
			}
			out[o.Kind+"/"+o.Metadata.Name] = o
		}
	}
	return out
}

// flag returns the value after name in args, and whether it is there.
func flag(args []string, name string) (string, bool) {
	i := slices.Index(args, name)
	if i < 0 || i+1 >= len(args) {
		return "", false
	}
	return args[i+1], true
}

func envValue(c container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func TestManifests(t *testing.T) {
	objs := load(t)
	gen, ok := objs["Job/limitbench-generators"]
	if !ok {
		t.Fatalf("no Job limitbench-generators among %d objects", len(objs))
	}
	merge, ok := objs["Job/limitbench-merge"]
	if !ok {
		t.Fatal("no Job limitbench-merge")
	}
	cm, ok := objs["ConfigMap/limitbench-scenario"]
	if !ok {
		t.Fatal("no ConfigMap limitbench-scenario")
	}
	if _, ok := objs["PersistentVolumeClaim/limitbench-results"]; !ok {
		t.Fatal("no PersistentVolumeClaim limitbench-results")
	}

	// The generators: an Indexed Job, all pods at once, each its own segment.
	s := gen.Spec
	if s.CompletionMode != "Indexed" {
		t.Errorf("generators: completionMode %q; want Indexed", s.CompletionMode)
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism || *s.Completions < 2 {
		t.Fatalf("generators: completions %v, parallelism %v; want equal (they meet at a barrier) and at least 2", s.Completions, s.Parallelism)
	}
	n := *s.Completions
	if s.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("generators: restartPolicy %q; want Never", s.Template.Spec.RestartPolicy)
	}
	if len(s.Template.Spec.Containers) != 1 {
		t.Fatalf("generators: %d containers; want 1", len(s.Template.Spec.Containers))
	}
	g := s.Template.Spec.Containers[0]
	if len(g.Args) == 0 || g.Args[0] != "run" {
		t.Errorf("generators: args %v; want limitbench run", g.Args)
	}
	if v, _ := flag(g.Args, "--segments"); v != strconv.Itoa(n) {
		t.Errorf("generators: --segments %q; want %d, the completions", v, n)
	}
	var index bool
	for _, e := range g.Env {
		if e.Name == "JOB_COMPLETION_INDEX" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			index = true
		}
	}
	if !index {
		t.Errorf("generators: JOB_COMPLETION_INDEX is not taken from the job-completion-index annotation")
	}
	runID := envValue(g, "RUN_ID")
	if v, _ := flag(g.Args, "--run-id"); v != "$(RUN_ID)" || runID == "" {
		t.Errorf("generators: --run-id %q, RUN_ID %q; want $(RUN_ID) set", v, runID)
	}
	out, _ := flag(g.Args, "--out")
	if !strings.Contains(out, "$(JOB_COMPLETION_INDEX)") {
		t.Errorf("generators: --out %q; want a directory per segment ($(JOB_COMPLETION_INDEX))", out)
	}
	if g.Resources.Requests["cpu"] == "" || g.Resources.Requests["memory"] == "" {
		t.Errorf("generators: resource requests %v; want cpu and memory", g.Resources.Requests)
	}
	scenarioPath := g.Args[len(g.Args)-1]
	mounts := map[string]string{}
	for _, m := range g.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	vols := map[string]volume{}
	for _, v := range s.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	var scenarioFile string
	for name, path := range mounts {
		v := vols[name]
		if v.ConfigMap != nil && v.ConfigMap.Name == "limitbench-scenario" && strings.HasPrefix(scenarioPath, path+"/") {
			scenarioFile = strings.TrimPrefix(scenarioPath, path+"/")
		}
	}
	if scenarioFile == "" {
		t.Errorf("generators: the scenario %s is not in the mounted ConfigMap limitbench-scenario", scenarioPath)
	}
	resultsMount := ""
	for name, path := range mounts {
		if v := vols[name]; v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "limitbench-results" {
			resultsMount = path
		}
	}
	if resultsMount == "" || !strings.HasPrefix(out, resultsMount+"/") {
		t.Errorf("generators: --out %q is not on the shared volume (mounted at %q)", out, resultsMount)
	}

	// The scenario in the ConfigMap is valid.
	body, ok := cm.Data[scenarioFile]
	if !ok {
		t.Fatalf("ConfigMap limitbench-scenario has no %q", scenarioFile)
	}
	path := filepath.Join(t.TempDir(), scenarioFile)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := scenarios.Load(path); err != nil {
		t.Errorf("the ConfigMap's scenario: %v", err)
	}

	// Both Jobs run the image as its non-root user, able to write to the shared volume.
	for name, job := range map[string]object{"generators": gen, "merge": merge} {
		sc := job.Spec.Template.Spec.SecurityContext
		if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != imageUID ||
			sc.FSGroup == nil || *sc.FSGroup != imageUID {
			t.Errorf("%s: securityContext runAsNonRoot %v, runAsUser %v, fsGroup %v; want true and the image's uid %d",
				name, sc.RunAsNonRoot, sc.RunAsUser, sc.FSGroup, imageUID)
		}
	}

	// The merge step reads exactly the N directories the generators write, on the same volume
	// and run.
	if len(merge.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("merge: %d containers; want 1", len(merge.Spec.Template.Spec.Containers))
	}
	m := merge.Spec.Template.Spec.Containers[0]
	if len(m.Args) == 0 || m.Args[0] != "merge" {
		t.Fatalf("merge: args %v; want limitbench merge", m.Args)
	}
	if envValue(m, "RUN_ID") != runID {
		t.Errorf("merge: RUN_ID %q; want the generators' %q", envValue(m, "RUN_ID"), runID)
	}
	var dirs []string
	for i := 1; i < len(m.Args); i++ {
		switch a := m.Args[i]; {
		case a == "--out":
			i++
		case strings.HasPrefix(a, "--"):
		default:
			dirs = append(dirs, a)
		}
	}
	var want []string
	for i := range n {
		want = append(want, strings.ReplaceAll(out, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(i)))
	}
	if fmt.Sprint(dirs) != fmt.Sprint(want) {
		t.Errorf("merge reads %v; want the generators' %v", dirs, want)
	}
	var mergeMount bool
	for _, vm := range m.VolumeMounts {
		for _, v := range merge.Spec.Template.Spec.Volumes {
			if v.Name == vm.Name && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "limitbench-results" &&
				vm.MountPath == resultsMount {
				mergeMount = true
			}
		}
	}
	if !mergeMount {
		t.Errorf("merge: the shared volume is not mounted at %s", resultsMount)
	}

	checkShardedMerge(t, objs, want, runID, resultsMount)
}

// checkShardedMerge checks the sharded merge: an Indexed Job of K pods, pod I running merge
// --shard I/K over exactly the generators' directories segments and writing its own directory on
// the shared volume, and a join Job that reads exactly those K directories with merge --join.
func checkShardedMerge(t *testing.T, objs map[string]object, segments []string, runID, resultsMount string) {
	shards, ok := objs["Job/limitbench-merge-shards"]
	if !ok {
		t.Fatal("no Job limitbench-merge-shards")
	}
	join, ok := objs["Job/limitbench-merge-join"]
	if !ok {
		t.Fatal("no Job limitbench-merge-join")
	}
	s := shards.Spec
	if s.CompletionMode != "Indexed" {
		t.Errorf("merge shards: completionMode %q; want Indexed", s.CompletionMode)
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions < 2 {
		t.Fatalf("merge shards: completions %v, parallelism %v; want at least 2 shards", s.Completions, s.Parallelism)
	}
	k := *s.Completions
	for name, job := range map[string]object{"merge shards": shards, "merge join": join} {
		sp := job.Spec.Template.Spec
		if sp.RestartPolicy != "Never" {
			t.Errorf("%s: restartPolicy %q; want Never", name, sp.RestartPolicy)
		}
		sc := sp.SecurityContext
		if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != imageUID ||
			sc.FSGroup == nil || *sc.FSGroup != imageUID {
			t.Errorf("%s: securityContext runAsNonRoot %v, runAsUser %v, fsGroup %v; want true and the image's uid %d",
				name, sc.RunAsNonRoot, sc.RunAsUser, sc.FSGroup, imageUID)
		}
		if len(sp.Containers) != 1 {
			t.Fatalf("%s: %d containers; want 1", name, len(sp.Containers))
		}
		c := sp.Containers[0]
		if len(c.Args) == 0 || c.Args[0] != "merge" {
			t.Fatalf("%s: args %v; want limitbench merge", name, c.Args)
		}
		if envValue(c, "RUN_ID") != runID {
			t.Errorf("%s: RUN_ID %q; want the generators' %q", name, envValue(c, "RUN_ID"), runID)
		}
		if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" {
			t.Errorf("%s: resource requests %v; want cpu and memory", name, c.Resources.Requests)
		}
		var mounted bool
		for _, vm := range c.VolumeMounts {
			for _, v := range sp.Volumes {
				if v.Name == vm.Name && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "limitbench-results" &&
					vm.MountPath == resultsMount {
					mounted = true
				}
			}
		}
		if !mounted {
			t.Errorf("%s: the shared volume is not mounted at %s", name, resultsMount)
		}
	}
	m := s.Template.Spec.Containers[0]
	if v, _ := flag(m.Args, "--shard"); v != "$(JOB_COMPLETION_INDEX)/"+strconv.Itoa(k) {
		t.Errorf("merge shards: --shard %q; want $(JOB_COMPLETION_INDEX)/%d, the completions", v, k)
	}
	var index bool
	for _, e := range m.Env {
		if e.Name == "JOB_COMPLETION_INDEX" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			index = true
		}
	}
	if !index {
		t.Errorf("merge shards: JOB_COMPLETION_INDEX is not taken from the job-completion-index annotation")
	}
	out, _ := flag(m.Args, "--out")
	if !strings.Contains(out, "$(JOB_COMPLETION_INDEX)") || !strings.HasPrefix(out, resultsMount+"/") {
		t.Errorf("merge shards: --out %q; want a directory per shard ($(JOB_COMPLETION_INDEX)) on the shared volume", out)
	}
	if dirs := positional(m.Args); fmt.Sprint(dirs) != fmt.Sprint(segments) {
		t.Errorf("merge shards read %v; want the generators' %v", dirs, segments)
	}
	j := join.Spec.Template.Spec.Containers[0]
	if !slices.Contains(j.Args, "--join") || slices.Contains(j.Args, "--shard") {
		t.Errorf("merge join: args %v; want merge --join", j.Args)
	}
	var want []string
	for i := range k {
		want = append(want, strings.ReplaceAll(out, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(i)))
	}
	if dirs := positional(j.Args); fmt.Sprint(dirs) != fmt.Sprint(want) {
		t.Errorf("merge join reads %v; want the shards' %v", dirs, want)
	}
	if out, _ := flag(j.Args, "--out"); !strings.HasPrefix(out, resultsMount+"/") || slices.Contains(want, out) {
		t.Errorf("merge join: --out %q; want a directory of its own on the shared volume", out)
	}
}

// positional returns the arguments of a limitbench merge command line args that are directories:
// neither flags nor the values of --out and --shard.
func positional(args []string) []string {
	var dirs []string
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--out" || a == "--shard":
			i++
		case strings.HasPrefix(a, "--"):
		default:
			dirs = append(dirs, a)
		}
	}
	return dirs
}
