package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// mdLink matches an inline Markdown link or image: [text](target) or
// ![alt](target), with an optional "title".
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)

// fence opens or closes a fenced code block.
var fence = regexp.MustCompile("^\\s*(```|~~~)")

// links returns the link targets of a Markdown file outside code blocks and
// code spans, with their line numbers.
func links(md string) (targets []string, lines []int) {
	inFence := false
	for i, line := range strings.Split(md, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		line = regexp.MustCompile("`[^`]*`").ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
			lines = append(lines, i+1)
		}
	}
	return targets, lines
}

// anchors returns the heading ids GitHub gives a Markdown file: the heading
// text in lower case, punctuation dropped, spaces as hyphens, and -1, -2 …
// on repeats.
func anchors(md string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		// Links in a heading count by their text.
		text = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(text, "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			ids[id+"-"+strconv.Itoa(n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

// TestRelativeLinksResolve checks every relative link in the README, the
// benchmarks page and docs/*.md: the file (or folder) exists inside the
// repository, and a #fragment names a heading of the Markdown file it
// points into. The README links nothing outside the repository at all.
func TestRelativeLinksResolve(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "BENCHMARKS.md")}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, docs...)
	checked := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		targets, lines := links(string(raw))
		for i, target := range targets {
			where := rel + ":" + strconv.Itoa(lines[i])
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				if rel == "README.md" {
					t.Errorf("%s: the README links outside the repository: %s", where, target)
				}
				continue
			}
			checked++
			pathPart, frag, _ := strings.Cut(target, "#")
			dest := file
			if pathPart != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(pathPart))
				if r, err := filepath.Rel(root, dest); err != nil || strings.HasPrefix(r, "..") {
					t.Errorf("%s: %s leaves the repository", where, target)
					continue
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: %s does not exist", where, target)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s: %s has a #fragment but is not Markdown", where, target)
				continue
			}
			body, err := os.ReadFile(dest)
			if err != nil {
				t.Errorf("%s: %s: %v", where, target, err)
				continue
			}
			if !anchors(string(body))[frag] {
				t.Errorf("%s: %s: no heading with id %q", where, target, frag)
			}
		}
	}
	if checked < 40 {
		t.Fatalf("checked only %d links; the scan is broken", checked)
	}
}

func TestAnchorsFollowGitHub(t *testing.T) {
	t.Parallel()
	md := "# Tier 2 queue: HTTP API, gate, binaries\n## `vwr local` and `vwr admin`\n```\n# not a heading\n```\n## Self-heal: loss detection and the recovery window\n## Tests\n## Tests\n## 대기열 (Korean)\n"
	got := anchors(md)
	for _, want := range []string{"tier-2-queue-http-api-gate-binaries", "vwr-local-and-vwr-admin", "self-heal-loss-detection-and-the-recovery-window", "tests", "tests-1", "대기열-korean"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a line in a code block became a heading")
	}
	targets, _ := links("see [a](x.md#y) and `[b](not-a-link.md)`\n```\n[c](in-code.md)\n```\n![img](img/p.png \"title\")\n")
	if strings.Join(targets, ",") != "x.md#y,img/p.png" {
		t.Errorf("links = %v", targets)
	}
}
