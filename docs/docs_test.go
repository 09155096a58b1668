// Package docs holds vwr's documentation; its test keeps the README's single
// configuration table in step with the environment variables the code reads.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// sdkVars are read by the AWS SDK's own configuration chain, never by vwr's
// code; the README documents them because operators set them.
var sdkVars = map[string]bool{"AWS_ENDPOINT_URL": true, "AWS_REGION": true}

// testOnly are read by internal/testenv only; the README names them in prose.
var testOnly = []string{"VWR_REDIS_SERVER", "VWR_REDIS_CLI", "VWR_MOTO_SERVER"}

// envVars returns every variable named by an `env:"…"` struct tag (the one
// way vwr's binaries read settings, internal/envconf) in the module's
// non-test Go files, with a file that reads it.
func envVars(t *testing.T, root string) map[string]string {
	t.Helper()
	read := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".venv", "node_modules", ".git", "testdata", "infra":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			st, ok := n.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				if field.Tag == nil {
					continue
				}
				tag, err := strconv.Unquote(field.Tag.Value)
				if err != nil {
					continue
				}
				if name, _, _ := strings.Cut(reflect.StructTag(tag).Get("env"), ","); name != "" {
					read[name] = path
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return read
}

func TestREADMEDocumentsEveryEnvVar(t *testing.T) {
	t.Parallel()
	root := ".."
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	read := envVars(t, root)
	if len(read) < 30 {
		t.Fatalf("found only %d variables in the code; the scan is broken", len(read))
	}
	var names []string
	for n := range read {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !strings.Contains(string(readme), "| `"+n+"` |") {
			t.Errorf("README's configuration table has no row for %s (read in %s)", n, read[n])
		}
	}
	for n := range sdkVars {
		if !strings.Contains(string(readme), "| `"+n+"` |") {
			t.Errorf("README's configuration table has no row for %s (read by the AWS SDK)", n)
		}
	}
	for _, n := range testOnly {
		if !strings.Contains(string(readme), "`"+n+"`") {
			t.Errorf("README does not mention test-only variable %s", n)
		}
	}
	// And no row for a variable nothing reads.
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_]+)` \\|").FindAllStringSubmatch(string(readme), -1) {
		if _, ok := read[m[1]]; !ok && !sdkVars[m[1]] {
			t.Errorf("README documents %s, which no code reads", m[1])
		}
	}
}
