//go:build unix

package main

import (
	"bytes"
	"debug/elf"
	"debug/pe"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// TestReleaseBuild builds idemtest as the README's release recipe does (a version from the tag
// through -ldflags, the commit stamped from the checkout) and reads both back from --version.
func TestReleaseBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary; skipped under -short")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is needed to stamp the commit")
	}
	if fi, err := os.Stat(".git"); err == nil && !fi.IsDir() {
		// A linked worktree (.git is a file naming the repository): go build stamps no VCS
		// information there, while a clone, which the README's recipe starts from, has it.
		t.Skip("a git worktree: go build stamps the commit only in a clone")
	}
	bin := filepath.Join(t.TempDir(), "idemtest")
	build := exec.Command("go", "build", "-buildvcs=true", "-ldflags", "-X github.com/idemtest/idemtest/cmd.Version=v0.9.1", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^idemtest v0\.9\.1 \(commit ` + string(head[:12]) + `(, modified)?\)\n$`)
	if !want.Match(out) {
		t.Errorf("--version printed %q, want %s", out, want)
	}
}

// goreleaserConfig is the part of .goreleaser.yaml that TestReleaseMatrix holds to the build it
// does and to what the action downloads.
type goreleaserConfig struct {
	Version     int    `yaml:"version"`
	ProjectName string `yaml:"project_name"`
	Builds      []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Env     []string `yaml:"env"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
	} `yaml:"builds"`
	Archives []struct {
		NameTemplate    string   `yaml:"name_template"`
		Formats         []string `yaml:"formats"`
		FormatOverrides []struct {
			Goos    string   `yaml:"goos"`
			Formats []string `yaml:"formats"`
		} `yaml:"format_overrides"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
	Sboms []struct {
		Artifacts string `yaml:"artifacts"`
	} `yaml:"sboms"`
	Kos []struct {
		Build     string   `yaml:"build"`
		BaseImage string   `yaml:"base_image"`
		Platforms []string `yaml:"platforms"`
		Env       []string `yaml:"env"`
		Flags     []string `yaml:"flags"`
		Ldflags   []string `yaml:"ldflags"`
	} `yaml:"kos"`
}

// TestReleaseMatrix builds every release target as .goreleaser.yaml says goreleaser will (the
// targets, environment and flags are read from it, so the two cannot drift): static, stripped,
// without local paths, for linux, darwin and windows on amd64 and arm64. It checks what it
// can of each binary and logs its size (BENCHMARKS.md records them). The configuration is held
// to the matrix the README promises and to the archive and checksum names the action downloads.
func TestReleaseMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles six binaries; skipped under -short")
	}
	gr, err := os.ReadFile(".goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kb, err := os.ReadFile(".ko.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, problems := releaseConfig(gr, kb)
	for _, p := range problems {
		t.Error(p)
	}
	if t.Failed() {
		t.FailNow()
	}
	build := cfg.Builds[0]

	const version = "v0.0.0-matrix"
	ldflags := strings.ReplaceAll(build.Ldflags[0], "{{ .Tag }}", version)
	if strings.Contains(ldflags, "{{") {
		t.Fatalf("ldflags %q use a template this test does not fill in", ldflags)
	}
	dir := t.TempDir()
	for _, goos := range build.Goos {
		for _, goarch := range build.Goarch {
			t.Run(goos+"_"+goarch, func(t *testing.T) {
				bin := filepath.Join(dir, "idemtest_"+goos+"_"+goarch)
				if goos == "windows" {
					bin += ".exe"
				}
				args := append([]string{"build"}, build.Flags...)
				c := exec.Command("go", append(args, "-ldflags", ldflags, "-o", bin, build.Main)...)
				c.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch)
				c.Env = append(c.Env, build.Env...)
				if out, err := c.CombinedOutput(); err != nil {
					t.Fatalf("go build: %v\n%s", err, out)
				}
				fi, err := os.Stat(bin)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s/%s: %d bytes (%.1f MiB)", goos, goarch, fi.Size(), float64(fi.Size())/(1<<20))
				checkReleaseBinary(t, bin, goos, goarch, version)
			})
		}
	}
}

// checkReleaseBinary checks what it can of one built release binary: static and stripped (ELF,
// PE), built with -trimpath, and, for this machine's platform, that it runs and prints version.
func checkReleaseBinary(t *testing.T, bin, goos, goarch, version string) {
	t.Helper()
	if goos == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if f.Section(".symtab") != nil {
			t.Error("the binary has a symbol table: not stripped (-s)")
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Error("the binary is dynamically linked: not static")
			}
		}
	}
	if goos == "windows" {
		f, err := pe.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if len(f.Symbols) > 0 {
			t.Errorf("the binary has %d symbols: not stripped (-s)", len(f.Symbols))
		}
	}
	if goos == runtime.GOOS && goarch == runtime.GOARCH {
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			t.Fatalf("--version: %v", err)
		}
		if !strings.HasPrefix(string(out), "idemtest "+version) {
			t.Errorf("--version printed %q, want idemtest %s", out, version)
		}
	}
	if data, err := os.ReadFile(bin); err == nil {
		repo, _ := os.Getwd()
		if bytes.Contains(data, []byte(repo)) {
			t.Errorf("the binary holds the checkout's path %s: not built with -trimpath", repo)
		}
	}
}

// releaseConfig reads .goreleaser.yaml and .ko.yaml and says where they differ from the promised
// release: the targets, the static and stripped build, the image built as the binaries are, and
// the archive and checksum names the action downloads.
func releaseConfig(gr, kb []byte) (goreleaserConfig, []string) {
	var cfg goreleaserConfig
	if err := yaml.Unmarshal(gr, &cfg); err != nil {
		return cfg, []string{fmt.Sprintf(".goreleaser.yaml: %v", err)}
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if cfg.Version != 2 || cfg.ProjectName != "idemtest" || len(cfg.Builds) != 1 || len(cfg.Kos) != 1 {
		return cfg, []string{fmt.Sprintf(".goreleaser.yaml: version %d, project %q, %d builds, %d kos: want version 2, idemtest, one build and one ko image", cfg.Version, cfg.ProjectName, len(cfg.Builds), len(cfg.Kos))}
	}
	build := cfg.Builds[0]
	if got, want := fmt.Sprint(build.Goos, build.Goarch), "[linux darwin windows] [amd64 arm64]"; got != want {
		bad("targets %s, want %s", got, want)
	}
	if !slices.Equal(build.Env, []string{"CGO_ENABLED=0"}) || !slices.Equal(build.Flags, []string{"-trimpath"}) ||
		len(build.Ldflags) != 1 || !strings.HasPrefix(build.Ldflags[0], "-s -w ") {
		bad("build env %q, flags %q, ldflags %q: want CGO_ENABLED=0, -trimpath, -s -w …", build.Env, build.Flags, build.Ldflags)
	}
	ko := cfg.Kos[0]
	if ko.Build != build.ID || !slices.Equal(ko.Env, build.Env) || !slices.Equal(ko.Flags, build.Flags) || !slices.Equal(ko.Ldflags, build.Ldflags) {
		bad("the ko image is built unlike the binaries: %+v", ko)
	}
	// .ko.yaml, for ko by hand, builds the image as the release does.
	var koCfg struct {
		DefaultBaseImage string   `yaml:"defaultBaseImage"`
		DefaultPlatforms []string `yaml:"defaultPlatforms"`
		Builds           []struct {
			Env     []string `yaml:"env"`
			Flags   []string `yaml:"flags"`
			Ldflags []string `yaml:"ldflags"`
		} `yaml:"builds"`
	}
	if err := yaml.Unmarshal(kb, &koCfg); err != nil {
		bad(".ko.yaml: %v", err)
	}
	if koCfg.DefaultBaseImage != ko.BaseImage || !slices.Equal(koCfg.DefaultPlatforms, ko.Platforms) || len(koCfg.Builds) != 1 ||
		!slices.Equal(koCfg.Builds[0].Env, ko.Env) || !slices.Equal(koCfg.Builds[0].Flags, ko.Flags) ||
		len(koCfg.Builds[0].Ldflags) != 1 || !strings.HasPrefix(koCfg.Builds[0].Ldflags[0], "-s -w ") {
		bad(".ko.yaml %+v builds unlike .goreleaser.yaml's kos: %+v", koCfg, ko)
	}
	// .github/action/idemtest.sh downloads idemtest_VERSION_OS_ARCH.tar.gz (.zip on a Windows
	// runner) and checks it against checksums.txt (SHA-256).
	if len(cfg.Archives) != 1 || cfg.Archives[0].NameTemplate != "{{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}" ||
		!slices.Equal(cfg.Archives[0].Formats, []string{"tar.gz"}) || len(cfg.Archives[0].FormatOverrides) != 1 ||
		cfg.Archives[0].FormatOverrides[0].Goos != "windows" || !slices.Equal(cfg.Archives[0].FormatOverrides[0].Formats, []string{"zip"}) ||
		cfg.Checksum.NameTemplate != "checksums.txt" || cfg.Checksum.Algorithm != "sha256" {
		bad("archives %+v, checksum %+v: not the names the action downloads", cfg.Archives, cfg.Checksum)
	}
	if len(cfg.Sboms) != 1 || cfg.Sboms[0].Artifacts != "archive" {
		bad("sboms %+v: want one SBOM per archive", cfg.Sboms)
	}
	return cfg, problems
}

// TestReleaseConfigDrift: releaseConfig goes red on a configuration that drifted from the
// promise, so that TestReleaseMatrix's checks can fail.
func TestReleaseConfigDrift(t *testing.T) {
	gr, err := os.ReadFile(".goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kb, err := os.ReadFile(".ko.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, problems := releaseConfig(gr, kb); len(problems) > 0 {
		t.Fatalf("the configuration as committed: %q", problems)
	}
	for _, tc := range []struct{ name, file, old, new, want string }{
		{"a target dropped", ".goreleaser.yaml", "goarch: [amd64, arm64]", "goarch: [amd64]", "targets"},
		{"Windows dropped", ".goreleaser.yaml", "goos: [linux, darwin, windows]", "goos: [linux, darwin]", "targets"},
		{"Windows archived as tar.gz", ".goreleaser.yaml", "        formats: [zip]", "        formats: [tar.gz]", "archives"},
		{"cgo on", ".goreleaser.yaml", "env: [CGO_ENABLED=0]\n    goos", "env: [CGO_ENABLED=1]\n    goos", "build env"},
		{"not stripped", ".goreleaser.yaml", `ldflags: ["-s -w -X`, `ldflags: ["-X`, "build env"},
		{"the image unlike the binaries", ".goreleaser.yaml", "    flags: [-trimpath]\n    ldflags: [\"-s -w -X github.com/idemtest/idemtest/cmd.Version={{ .Tag }}\"]\n    env", "    flags: []\n    ldflags: [\"-s -w -X github.com/idemtest/idemtest/cmd.Version={{ .Tag }}\"]\n    env", "ko image"},
		{"checksums renamed", ".goreleaser.yaml", "name_template: checksums.txt", "name_template: sums.txt", "checksum"},
		{".ko.yaml another base", ".ko.yaml", "cgr.dev/chainguard/static", "alpine", ".ko.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, k := string(gr), string(kb)
			target := &g
			if tc.file == ".ko.yaml" {
				target = &k
			}
			if !strings.Contains(*target, tc.old) {
				t.Fatalf("%s does not contain %q", tc.file, tc.old)
			}
			*target = strings.Replace(*target, tc.old, tc.new, 1)
			_, problems := releaseConfig([]byte(g), []byte(k))
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("problems %q, want one about %q", problems, tc.want)
			}
		})
	}
}
