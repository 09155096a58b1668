package lambdatest_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/lambdatest"
)

type reply struct {
	Say         string `json:"say"`
	Count       int    `json:"count"`
	Greeting    string `json:"greeting"`
	InheritsEnv bool   `json:"inheritsEnv"`
	HasDeadline bool   `json:"hasDeadline"`
}

const echoPkg = "./internal/lambdatest/testdata/echo"

func TestInvokeWarmProcess(t *testing.T) {
	t.Setenv("LAMBDATEST_PARENT_ONLY", "leak")
	bin := lambdatest.Build(t, echoPkg)
	fn := lambdatest.Start(t, bin, lambdatest.Options{Env: map[string]string{"ECHO_GREETING": "hi"}})

	for i, say := range []string{"one", "two", "three"} {
		res := fn.Invoke(t, []byte(`{"say":"`+say+`"}`))
		if res.Error != nil {
			t.Fatalf("invoke %d: function error %v", i, res.Error)
		}
		var r reply
		if err := json.Unmarshal(res.Payload, &r); err != nil {
			t.Fatalf("invoke %d: decode %q: %v", i, res.Payload, err)
		}
		want := reply{Say: say, Count: i + 1, Greeting: "hi", HasDeadline: true}
		if r != want {
			t.Errorf("invoke %d: got %+v, want %+v", i, r, want)
		}
	}
}

func TestFunctionErrors(t *testing.T) {
	t.Parallel()
	bin := lambdatest.Build(t, echoPkg)

	t.Run("returned error", func(t *testing.T) {
		t.Parallel()
		fn := lambdatest.Start(t, bin, lambdatest.Options{})
		res := fn.Invoke(t, []byte(`{"fail":true}`))
		if res.Error == nil || res.Error.Message != "asked to fail" {
			t.Fatalf("got error %+v payload %q, want errorMessage \"asked to fail\"", res.Error, res.Payload)
		}
		// The process survives a returned error and serves the next event.
		if res := fn.Invoke(t, []byte(`{"say":"again"}`)); res.Error != nil {
			t.Fatalf("after error: %v", res.Error)
		}
	})

	t.Run("panic", func(t *testing.T) {
		t.Parallel()
		fn := lambdatest.Start(t, bin, lambdatest.Options{})
		res := fn.Invoke(t, []byte(`{"panic":true}`))
		// aws-lambda-go reports the panic value's type and a stack trace.
		if res.Error == nil || res.Error.Message != "asked to panic" || len(res.Error.StackTrace) == 0 {
			t.Fatalf("got %+v, want the panic message with a stack trace", res.Error)
		}
		if !fn.WaitExit(5 * time.Second) {
			t.Fatal("process still running after a panic; aws-lambda-go exits")
		}
	})

	t.Run("init error", func(t *testing.T) {
		t.Parallel()
		fn := lambdatest.Start(t, bin, lambdatest.Options{Env: map[string]string{"ECHO_INIT_FAIL": "bad config"}})
		_, err := fn.InvokeErr([]byte(`{}`))
		if err == nil {
			t.Fatal("invoke succeeded, want an init failure")
		}
		ie := fn.InitError()
		if ie == nil || ie.Message != "bad config" || ie.Type != "Runtime.ConfigError" {
			t.Fatalf("init error = %+v, want bad config / Runtime.ConfigError", ie)
		}
	})

	t.Run("process exits without polling", func(t *testing.T) {
		t.Parallel()
		// A process that exits without ever polling /next must not hang
		// InvokeErr.
		fn := lambdatest.Start(t, "/bin/true", lambdatest.Options{Timeout: time.Second})
		if _, err := fn.InvokeErr([]byte(`{}`)); err == nil {
			t.Fatal("invoke of a dead process succeeded")
		}
	})
}
