// Package docs holds vwr's documentation; its test keeps the README's single
// configuration table in step with the environment variables the code reads.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// envName matches the variables vwr reads. AWS_* variables other than the
// two the README documents belong to the SDK's credential chain.
var envName = regexp.MustCompile(`"((?:QUEUE|VWR|SQS|ADVANCER)_[A-Z0-9_]+|REDIS_URL|AWS_ENDPOINT_URL|AWS_REGION)"`)

// testOnly are read by internal/testenv only; the README names them in prose.
var testOnly = map[string]bool{"VWR_REDIS_SERVER": true, "VWR_REDIS_CLI": true, "VWR_MOTO_SERVER": true}

func TestREADMEDocumentsEveryEnvVar(t *testing.T) {
	t.Parallel()
	root := ".."
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".venv" || d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.Contains(path, string(filepath.Separator)+"testdata"+string(filepath.Separator)) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range envName.FindAllStringSubmatch(string(src), -1) {
			read[m[1]] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(read) < 20 {
		t.Fatalf("found only %d variables in the code; the scan is broken", len(read))
	}
	var names []string
	for n := range read {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		row := "| `" + n + "` |"
		switch {
		case testOnly[n]:
			if !strings.Contains(string(readme), "`"+n+"`") {
				t.Errorf("README does not mention test-only variable %s (read in %s)", n, read[n])
			}
		case !strings.Contains(string(readme), row):
			t.Errorf("README's configuration table has no row for %s (read in %s)", n, read[n])
		}
	}
	// And no row for a variable nothing reads.
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_]+)` \\|").FindAllStringSubmatch(string(readme), -1) {
		if _, ok := read[m[1]]; !ok {
			t.Errorf("README documents %s, which no code reads", m[1])
		}
	}
}
