package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
	"github.com/vwr-go/vwr/internal/token"
)

// kvsStandIn serves the four calls of the CloudFront KeyValueStore data
// plane that `vwr admin edge-keys` makes (DescribeKeyValueStore, ListKeys
// with pages, UpdateKeys with If-Match). Neither moto nor LocalStack serves
// that API, so this stand-in holds the store in a map; it insists on what
// AWS insists on: a SigV4A signature for the cloudfront-keyvaluestore
// service, the store's ARN in the path, and the current ETag, which every
// change replaces.
type kvsStandIn struct {
	t     *testing.T
	arn   string
	mu    sync.Mutex
	keys  map[string]string
	etag  int
	calls []string
}

func newKVSStandIn(t *testing.T, arn string, keys map[string]string) (*kvsStandIn, string) {
	s := &kvsStandIn{t: t, arn: arn, keys: keys, etag: 1}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func (s *kvsStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-ECDSA-P256-SHA256 ") || !strings.Contains(auth, "/cloudfront-keyvaluestore/aws4_request") {
		s.fail(w, 403, "AccessDeniedException", "not signed with SigV4A for cloudfront-keyvaluestore: "+auth)
		return
	}
	raw := r.URL.EscapedPath()
	rest, ok := strings.CutPrefix(raw, "/key-value-stores/")
	if !ok {
		s.fail(w, 404, "ResourceNotFoundException", raw)
		return
	}
	arn, tail, _ := strings.Cut(rest, "/")
	if got, _ := url.PathUnescape(arn); got != s.arn {
		s.fail(w, 404, "ResourceNotFoundException", "no store "+got)
		return
	}
	etag := fmt.Sprintf("ETAG%d", s.etag)
	switch {
	case r.Method == "GET" && tail == "":
		s.calls = append(s.calls, "describe")
		w.Header().Set("ETag", etag)
		writeJSON(w, map[string]any{"KvsARN": s.arn, "ItemCount": len(s.keys), "TotalSizeInBytes": 0, "Created": 1.7e9})
	case r.Method == "GET" && tail == "keys":
		s.calls = append(s.calls, "list")
		names := make([]string, 0, len(s.keys))
		for k := range s.keys {
			names = append(names, k)
		}
		sort.Strings(names)
		start := 0
		if n := r.URL.Query().Get("NextToken"); n != "" {
			fmt.Sscan(n, &start)
		}
		end := min(start+2, len(names)) // pages of 2, so paging is exercised
		var items []map[string]string
		for _, k := range names[start:end] {
			items = append(items, map[string]string{"Key": k, "Value": s.keys[k]})
		}
		out := map[string]any{"Items": items}
		if end < len(names) {
			out["NextToken"] = fmt.Sprint(end)
		}
		writeJSON(w, out)
	case r.Method == "POST" && tail == "keys":
		if r.Header.Get("If-Match") != etag {
			s.fail(w, 409, "ConflictException", "If-Match "+r.Header.Get("If-Match")+" is not "+etag)
			return
		}
		var in struct {
			Puts    []struct{ Key, Value string }
			Deletes []struct{ Key string }
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || len(in.Puts)+len(in.Deletes) == 0 {
			s.fail(w, 400, "ValidationException", "bad UpdateKeys body")
			return
		}
		var names []string
		for _, p := range in.Puts {
			s.keys[p.Key] = p.Value
			names = append(names, "put "+p.Key)
		}
		for _, d := range in.Deletes {
			delete(s.keys, d.Key)
			names = append(names, "delete "+d.Key)
		}
		s.calls = append(s.calls, "update("+strings.Join(names, ",")+")")
		s.etag++
		w.Header().Set("ETag", fmt.Sprintf("ETAG%d", s.etag))
		writeJSON(w, map[string]any{"ItemCount": len(s.keys), "TotalSizeInBytes": 0})
	default:
		s.fail(w, 400, "ValidationException", r.Method+" "+raw)
	}
}

func (s *kvsStandIn) fail(w http.ResponseWriter, code int, typ, msg string) {
	s.t.Errorf("KeyValueStore stand-in: %s: %s", typ, msg)
	w.Header().Set("X-Amzn-Errortype", typ)
	w.WriteHeader(code)
	writeJSON(w, map[string]string{"message": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *kvsStandIn) snapshot() (map[string]string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, v := range s.keys {
		out[k] = v
	}
	calls := s.calls
	s.calls = nil
	return out, calls
}

// TestEdgeKeys walks the keys' life: an empty store after the deploy is
// filled, a second sync changes nothing, a rotation reaches the edge before
// the secret, a retirement leaves the secret before the edge, and a kid the
// secret lost is deleted from the store. Secrets Manager is moto.
func TestEdgeKeys(t *testing.T) {
	t.Parallel()
	endpoint := testenv.Moto(t)
	sm := secretsmanager.NewFromConfig(awstest.Config(endpoint))
	k1 := strings.Repeat("1", 48)
	out, err := sm.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
		Name: aws.String("vwr/edge-keys-" + testenv.UniqueID(t)), SecretString: aws.String(`{"kid":"k1","secret":"` + k1 + `"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	secretARN := aws.ToString(out.ARN)
	storeARN := "arn:aws:cloudfront::123456789012:key-value-store/" + testenv.UniqueID(t)
	store, storeURL := newKVSStandIn(t, storeARN, map[string]string{})
	env := map[string]string{
		"VWR_TIER1_KEYS_SECRET_ARN": secretARN, "VWR_EDGE_KEYS_ARN": storeARN,
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_ENDPOINT_URL": endpoint, "AWS_ENDPOINT_URL_CLOUDFRONT_KEYVALUESTORE": storeURL,
	}
	run := func(args ...string) edgeKeysReport {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := dispatch(context.Background(), invocation{Args: append([]string{"admin", "edge-keys"}, args...), Stdout: &stdout, Stderr: &stderr, Env: env})
		if code != exitOK {
			t.Fatalf("edge-keys %v: exit %d\n%s", args, code, stderr.String())
		}
		var rep edgeKeysReport
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			t.Fatalf("edge-keys %v printed %q", args, stdout.String())
		}
		if strings.Contains(stdout.String()+stderr.String(), k1) {
			t.Fatalf("edge-keys %v printed a secret", args)
		}
		return rep
	}
	ring := func() []token.KeyPair {
		t.Helper()
		o, err := sm.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretARN)})
		if err != nil {
			t.Fatal(err)
		}
		r, err := token.ParseKeyRing(aws.ToString(o.SecretString))
		if err != nil {
			t.Fatal(err)
		}
		return r.Pairs()
	}

	// The fresh deploy: an empty store, filled by one conditional update.
	if rep := run("sync", "-dry-run"); fmt.Sprint(rep.Put) != "[k1]" || !rep.DryRun {
		t.Fatalf("dry run %+v", rep)
	}
	if keys, _ := store.snapshot(); len(keys) != 0 {
		t.Fatalf("a dry run wrote %v", keys)
	}
	rep := run("sync")
	keys, calls := store.snapshot()
	if fmt.Sprint(rep.Put) != "[k1]" || keys["k1"] != k1 || len(keys) != 1 || calls[len(calls)-1] != "update(put k1)" {
		t.Fatalf("first sync %+v, store %v, calls %v", rep, keys, calls)
	}
	if rep := run("sync"); len(rep.Put)+len(rep.Deleted) != 0 || fmt.Sprint(rep.Kept) != "[k1]" {
		t.Fatalf("second sync %+v", rep)
	}
	if _, calls := store.snapshot(); strings.Contains(strings.Join(calls, " "), "update") {
		t.Fatalf("a sync with nothing to do updated the store: %v", calls)
	}

	// Rotate: the new kid reaches the edge, then signs.
	rep = run("rotate")
	keys, calls = store.snapshot()
	pairs := ring()
	if rep.Kids[0] != "k2" || pairs[0].Kid != "k2" || pairs[1].Kid != "k1" || keys["k2"] != pairs[0].Secret || keys["k1"] != k1 ||
		calls[len(calls)-1] != "update(put k2)" || !strings.Contains(rep.Next, "retire -kid k1") {
		t.Fatalf("rotate %+v, ring %v, store %v, calls %v", rep, kids(pairs), keys, calls)
	}
	// Retire k1: gone from the secret, then from the edge.
	rep = run("retire", "-kid", "k1")
	keys, _ = store.snapshot()
	if pairs := ring(); len(pairs) != 1 || pairs[0].Kid != "k2" || len(keys) != 1 || keys["k1"] != "" || fmt.Sprint(rep.Deleted) != "[k1]" {
		t.Fatalf("retire %+v, ring %v, store %v", rep, kids(pairs), keys)
	}

	// A stale store (a kid the secret dropped, a value that changed, more
	// keys than one page) is made equal.
	store.mu.Lock()
	store.keys["k0"], store.keys["k2"], store.keys["old-a"] = "stale", "changed", "x"
	store.mu.Unlock()
	rep = run("sync")
	keys, _ = store.snapshot()
	if len(keys) != 1 || keys["k2"] != ring()[0].Secret || fmt.Sprint(rep.Deleted) != "[k0 old-a]" || fmt.Sprint(rep.Put) != "[k2]" {
		t.Fatalf("sync of a stale store %+v, store %v", rep, keys)
	}
}

func TestEdgeKeysRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"sync"}, map[string]string{"VWR_EDGE_KEYS_ARN": "arn:aws:cloudfront::1:key-value-store/x"}, "-secret"},
		{[]string{"sync", "-secret", "arn:aws:secretsmanager:eu-west-1:1:secret:x"}, nil, "-store"},
		{[]string{"retire", "-secret", "arn:aws:secretsmanager:eu-west-1:1:secret:x", "-store", "arn:aws:cloudfront::1:key-value-store/x"}, nil, "-kid"},
		{[]string{"rotate", "-kid", "a b", "-secret", "arn:aws:secretsmanager:eu-west-1:1:secret:x", "-store", "arn:aws:cloudfront::1:key-value-store/x"}, nil, "-kid"},
		{[]string{"shred"}, nil, "usage: vwr admin edge-keys"},
	} {
		var stderr bytes.Buffer
		code := dispatch(context.Background(), invocation{Args: append([]string{"admin", "edge-keys"}, tc.args...), Stdout: &bytes.Buffer{}, Stderr: &stderr, Env: tc.env})
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want a usage error naming %s", tc.args, code, stderr.String(), tc.want)
		}
	}
}
