// Package docs holds vwr's documentation. Its tests keep the single
// configuration table (configuration.md) in step with the environment
// variables the code reads, and every relative link in the README and the
// docs pointing at something that exists.
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
// code; the table documents them because operators set them.
var sdkVars = map[string]bool{"AWS_ENDPOINT_URL": true, "AWS_REGION": true}

// testOnly are read by internal/testenv only; testing.md names them in prose.
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

// configTable is the one place every variable is documented.
const configTable = "configuration.md"

func TestConfigurationTableDocumentsEveryEnvVar(t *testing.T) {
	t.Parallel()
	root := ".."
	table, err := os.ReadFile(configTable)
	if err != nil {
		t.Fatal(err)
	}
	testingDoc, err := os.ReadFile("testing.md")
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
		if !strings.Contains(string(table), "| `"+n+"` |") {
			t.Errorf("docs/%s has no row for %s (read in %s)", configTable, n, read[n])
		}
	}
	for n := range sdkVars {
		if !strings.Contains(string(table), "| `"+n+"` |") {
			t.Errorf("docs/%s has no row for %s (read by the AWS SDK)", configTable, n)
		}
	}
	for _, n := range testOnly {
		if !strings.Contains(string(testingDoc), "`"+n+"`") {
			t.Errorf("docs/testing.md does not mention test-only variable %s", n)
		}
	}
	// And no row for a variable nothing reads.
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_]+)` \\|").FindAllStringSubmatch(string(table), -1) {
		if _, ok := read[m[1]]; !ok && !sdkVars[m[1]] {
			t.Errorf("docs/%s documents %s, which no code reads", configTable, m[1])
		}
	}
	// The README points at the table, so a reader finds it from the front page.
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "](docs/"+configTable+")") {
		t.Errorf("README.md does not link docs/%s", configTable)
	}
}
