package envconf

import (
	"slices"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Level string `env:"T_LEVEL"`
}

type sample struct {
	Name    string        `env:"T_NAME"`
	Flag    bool          `env:"T_FLAG"`
	Go      time.Duration `env:"T_GO"`
	Secs    Seconds       `env:"T_SECONDS"`
	Millis  Millis        `env:"T_MS"`
	Count   Positive      `env:"T_COUNT"`
	List    List          `env:"T_LIST"`
	Nested  inner
	Ignored string
}

func TestParse(t *testing.T) {
	t.Parallel()
	var s sample
	err := Parse(&s, map[string]string{
		"T_NAME": "  name  ", "T_FLAG": "true", "T_GO": "1m30s", "T_SECONDS": "600", "T_MS": "250",
		"T_COUNT": "7", "T_LIST": " /a/ , ,/b/ ", "T_LEVEL": "debug", "OTHER": "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := sample{Name: "name", Flag: true, Go: 90 * time.Second, Secs: Seconds(600 * time.Second), Millis: Millis(250 * time.Millisecond),
		Count: 7, List: List{"/a/", "/b/"}, Nested: inner{Level: "debug"}}
	if s.Name != want.Name || s.Flag != want.Flag || s.Go != want.Go || s.Secs != want.Secs || s.Millis != want.Millis ||
		s.Count != want.Count || !slices.Equal(s.List, want.List) || s.Nested != want.Nested || s.Ignored != "" {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	if s.Secs.D() != 10*time.Minute || s.Millis.D() != 250*time.Millisecond {
		t.Fatalf("D() = %s, %s", s.Secs.D(), s.Millis.D())
	}

	// Unset and empty leave zero values: the owner's WithDefaults decides.
	var zero sample
	if err := Parse(&zero, map[string]string{"T_NAME": "", "T_SECONDS": "  "}); err != nil {
		t.Fatal(err)
	}
	if zero.Name != "" || zero.Secs != 0 || zero.Count != 0 || zero.List != nil {
		t.Fatalf("unset fields = %+v", zero)
	}
}

// TestParseErrorsNameTheVariable: every malformed value is reported, each by
// its variable's name, not the Go field's.
func TestParseErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	var s sample
	err := Parse(&s, map[string]string{
		"T_FLAG": "yes please", "T_GO": "10", "T_SECONDS": "0", "T_MS": "1.5", "T_COUNT": "-3",
	})
	if err == nil {
		t.Fatal("malformed values were accepted")
	}
	for _, name := range []string{"T_FLAG", "T_GO", "T_SECONDS", "T_MS", "T_COUNT"} {
		if !strings.Contains(err.Error(), name+":") {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
	for _, field := range []string{`"Flag"`, `"Secs"`, `"Count"`} {
		if strings.Contains(err.Error(), field) {
			t.Errorf("error names the Go field %s: %v", field, err)
		}
	}
}
