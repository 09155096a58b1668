package testenv

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PythonHTTP runs script with python3 (a program that serves HTTP on the
// port given as its first argument, e.g. with the standard library's
// http.server) and returns its base URL once it answers. The process is
// killed when the test ends. Tests use it as a site not written in Go.
func PythonHTTP(tb testing.TB, script string) string {
	tb.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		tb.Fatalf("testenv: python3 not found: install Python 3 (Debian: apt-get install python3), as `make testenv` expects")
	}
	for attempt := 0; attempt < startAttempts; attempt++ {
		dir, err := os.MkdirTemp("", "vwr-python-")
		if err != nil {
			tb.Fatal(err)
		}
		file := filepath.Join(dir, "site.py")
		if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
			tb.Fatal(err)
		}
		port := FreePort(tb)
		s := start(tb, py, []string{file, strconv.Itoa(port)}, dir)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		if err := waitHTTP(s, base+"/"); err != nil {
			out := s.log()
			s.discard()
			if err == errLostPort {
				continue
			}
			tb.Fatalf("testenv: python3 site: %v:\n%s", err, out)
		}
		tb.Cleanup(s.discard)
		return base
	}
	tb.Fatalf("testenv: python3 site did not start after %d attempts", startAttempts)
	return ""
}

// waitHTTP waits until url answers; errLostPort when the process exited
// because another took its port.
func waitHTTP(s *server, url string) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-s.exited:
			if strings.Contains(s.log(), "Address already in use") {
				return errLostPort
			}
			return errors.New("exited")
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("did not answer in 20s")
}
