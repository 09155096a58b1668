package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	kvs "github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore"
	kvstypes "github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smithyendpoints "github.com/aws/smithy-go/endpoints"

	"github.com/vwr-go/vwr/internal/envconf"
	"github.com/vwr-go/vwr/internal/token"
)

// `vwr admin edge-keys` keeps the front door's KeyValueStore (kid → secret,
// read by the edge check) equal to the Tier 1 key secret in Secrets
// Manager, with the AWS SDK (SigV4 for Secrets Manager, SigV4A for the
// KeyValueStore). make deploy runs sync after every deployment, so the store
// is never empty; rotate and retire change both in the order that keeps
// every pass in flight valid (docs/deploy.md, key rotation).

// edgeKeysEnv is what the command reads from the environment: the stack
// outputs, and the SDK's own variables (passed explicitly so tests can run
// in parallel, each with its own).
type edgeKeysEnv struct {
	SecretARN string `env:"VWR_TIER1_KEYS_SECRET_ARN"`
	StoreARN  string `env:"VWR_EDGE_KEYS_ARN"`

	AccessKey    string `env:"AWS_ACCESS_KEY_ID"`
	SecretKey    string `env:"AWS_SECRET_ACCESS_KEY"`
	SessionToken string `env:"AWS_SESSION_TOKEN"`
	Endpoint     string `env:"AWS_ENDPOINT_URL"`
	// StoreEndpoint is the SDK's per-service endpoint variable for the
	// KeyValueStore data plane (a stand-in's URL, used as it is).
	StoreEndpoint string `env:"AWS_ENDPOINT_URL_CLOUDFRONT_KEYVALUESTORE"`
}

const edgeKeysUsage = `usage: vwr admin edge-keys <sync|rotate|retire> [flags]

Keeps the front door's KeyValueStore equal to the Tier 1 key secret.

  sync               put every kid of the secret into the store, delete kids the
                     secret no longer has (make deploy runs it)
  rotate [-kid K]    add a new signing key: to the store first, then first in
                     the secret (default kid: the next k<N>)
  retire -kid K      drop a kid from the secret, then from the store

flags:
  -secret ARN   the Tier 1 key secret (VWR_TIER1_KEYS_SECRET_ARN; stack output Tier1KeysSecretArn)
  -store ARN    the KeyValueStore (VWR_EDGE_KEYS_ARN; stack output EdgeKeysArn)
  -dry-run      say what would change, change nothing
  -timeout D    for the whole command (default 1m)

AWS credentials come from the usual chain. Prints a JSON summary naming kids,
never secrets.
`

// edgeKeysReport is the command's JSON summary.
type edgeKeysReport struct {
	Action  string   `json:"action"`
	Store   string   `json:"store"`
	Kids    []string `json:"kids"` // the secret's, signing first
	Put     []string `json:"put"`
	Deleted []string `json:"deleted"`
	Kept    []string `json:"kept"`
	DryRun  bool     `json:"dryRun,omitempty"`
	Next    string   `json:"next,omitempty"`
}

func runEdgeKeys(ctx context.Context, inv invocation) int {
	if len(inv.Args) < 2 || (inv.Args[1] != "sync" && inv.Args[1] != "rotate" && inv.Args[1] != "retire") {
		out := inv.Stderr
		code := exitUsage
		if len(inv.Args) == 2 && (inv.Args[1] == "-h" || inv.Args[1] == "-help" || inv.Args[1] == "--help") {
			out, code = inv.Stdout, exitOK
		}
		fmt.Fprint(out, edgeKeysUsage)
		return code
	}
	action := inv.Args[1]
	var env edgeKeysEnv
	if err := envconf.Parse(&env, inv.Env); err != nil {
		fmt.Fprintf(inv.Stderr, "vwr admin edge-keys: %v\n", err)
		return exitUsage
	}
	fs := flag.NewFlagSet("vwr admin edge-keys "+action, flag.ContinueOnError)
	fs.SetOutput(inv.Stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), edgeKeysUsage) }
	secretARN := fs.String("secret", env.SecretARN, "the Tier 1 key secret's ARN (VWR_TIER1_KEYS_SECRET_ARN)")
	storeARN := fs.String("store", env.StoreARN, "the edge KeyValueStore's ARN (VWR_EDGE_KEYS_ARN)")
	dryRun := fs.Bool("dry-run", false, "say what would change, change nothing")
	timeout := fs.Duration("timeout", time.Minute, "for the whole command")
	kid := fs.String("kid", "", "rotate: the new kid (default the next k<N>); retire: the kid to drop")
	if err := fs.Parse(inv.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	region, err := secretRegion(*secretARN)
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	case err != nil:
	case !strings.HasPrefix(*storeARN, "arn:aws:cloudfront::") || !strings.Contains(*storeARN, ":key-value-store/"):
		err = fmt.Errorf("-store %q is not a KeyValueStore ARN (arn:aws:cloudfront::ACCOUNT:key-value-store/ID; stack output EdgeKeysArn)", *storeARN)
	case action == "retire" && *kid == "":
		err = errors.New("retire needs -kid")
	case *kid != "" && !kidRE.MatchString(*kid):
		err = fmt.Errorf("-kid %q: 1-64 of A-Z a-z 0-9 _ - .", *kid)
	}
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr admin edge-keys: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	e, err := newEdgeKeys(ctx, env, region, *secretARN, *storeARN)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr admin edge-keys: %v\n", err)
		return exitError
	}
	var rep edgeKeysReport
	switch action {
	case "sync":
		rep, err = e.sync(ctx, *dryRun)
	case "rotate":
		rep, err = e.rotate(ctx, *kid, *dryRun)
	case "retire":
		rep, err = e.retire(ctx, *kid, *dryRun)
	}
	if err != nil {
		fmt.Fprintf(inv.Stderr, "vwr admin edge-keys %s: %v\n", action, err)
		return exitError
	}
	rep.Action, rep.Store, rep.DryRun = action, *storeARN, *dryRun
	writeReport(inv.Stdout, rep)
	return exitOK
}

var kidRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// secretRegion reads the region from a Secrets Manager ARN.
func secretRegion(arn string) (string, error) {
	parts := strings.SplitN(arn, ":", 7)
	if len(parts) < 7 || parts[0] != "arn" || parts[2] != "secretsmanager" || parts[3] == "" || parts[5] != "secret" {
		return "", fmt.Errorf("-secret %q is not a Secrets Manager secret ARN (stack output Tier1KeysSecretArn)", arn)
	}
	return parts[3], nil
}

// edgeKeys holds the two clients and the two ARNs.
type edgeKeys struct {
	sm                  *secretsmanager.Client
	store               *kvs.Client
	secretARN, storeARN string
}

func newEdgeKeys(ctx context.Context, env edgeKeysEnv, region, secretARN, storeARN string) (*edgeKeys, error) {
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(region)}
	if env.AccessKey != "" && env.SecretKey != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(env.AccessKey, env.SecretKey, env.SessionToken)))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	e := &edgeKeys{secretARN: secretARN, storeARN: storeARN}
	e.sm = secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		if env.Endpoint != "" {
			o.BaseEndpoint = aws.String(env.Endpoint)
		}
	})
	var fixed *url.URL
	if env.StoreEndpoint != "" {
		if fixed, err = url.Parse(env.StoreEndpoint); err != nil || fixed.Host == "" {
			return nil, fmt.Errorf("AWS_ENDPOINT_URL_CLOUDFRONT_KEYVALUESTORE %q is not a URL", env.StoreEndpoint)
		}
	}
	e.store = kvs.NewFromConfig(cfg, func(o *kvs.Options) {
		if fixed != nil {
			o.EndpointResolverV2 = fixedEndpoint{*fixed}
		}
	})
	return e, nil
}

// fixedEndpoint sends every KeyValueStore call to one URL as it is (the
// SDK's own rules would put the account id in front of its host name).
type fixedEndpoint struct{ u url.URL }

func (f fixedEndpoint) ResolveEndpoint(context.Context, kvs.EndpointParameters) (smithyendpoints.Endpoint, error) {
	return smithyendpoints.Endpoint{URI: f.u}, nil
}

// ring reads the Tier 1 key secret.
func (e *edgeKeys) ring(ctx context.Context) ([]token.KeyPair, error) {
	out, err := e.sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(e.secretARN)})
	if err != nil {
		return nil, fmt.Errorf("read the Tier 1 key secret: %w", err)
	}
	r, err := token.ParseKeyRing(aws.ToString(out.SecretString))
	if err != nil {
		return nil, fmt.Errorf("the Tier 1 key secret: %w", err) // names kids, never secrets
	}
	return r.Pairs(), nil
}

func (e *edgeKeys) writeRing(ctx context.Context, pairs []token.KeyPair) error {
	spec, err := token.RingJSON(pairs)
	if err != nil {
		return err
	}
	if _, err := token.ParseKeyRing(spec); err != nil {
		return err
	}
	_, err = e.sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(e.secretARN), SecretString: aws.String(spec)})
	if err != nil {
		return fmt.Errorf("write the Tier 1 key secret: %w", err)
	}
	return nil
}

// stored reads every key of the store and its ETag.
func (e *edgeKeys) stored(ctx context.Context) (map[string]string, string, error) {
	d, err := e.store.DescribeKeyValueStore(ctx, &kvs.DescribeKeyValueStoreInput{KvsARN: aws.String(e.storeARN)})
	if err != nil {
		return nil, "", fmt.Errorf("describe the KeyValueStore: %w", err)
	}
	have := map[string]string{}
	p := kvs.NewListKeysPaginator(e.store, &kvs.ListKeysInput{KvsARN: aws.String(e.storeARN)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("list the KeyValueStore: %w", err)
		}
		for _, it := range page.Items {
			have[aws.ToString(it.Key)] = aws.ToString(it.Value)
		}
	}
	return have, aws.ToString(d.ETag), nil
}

// update applies puts and deletes in one conditional call.
func (e *edgeKeys) update(ctx context.Context, etag string, puts []token.KeyPair, deletes []string) error {
	if len(puts) == 0 && len(deletes) == 0 {
		return nil
	}
	in := &kvs.UpdateKeysInput{KvsARN: aws.String(e.storeARN), IfMatch: aws.String(etag)}
	for _, p := range puts {
		in.Puts = append(in.Puts, kvstypes.PutKeyRequestListItem{Key: aws.String(p.Kid), Value: aws.String(p.Secret)})
	}
	for _, k := range deletes {
		in.Deletes = append(in.Deletes, kvstypes.DeleteKeyRequestListItem{Key: aws.String(k)})
	}
	if _, err := e.store.UpdateKeys(ctx, in); err != nil {
		return fmt.Errorf("update the KeyValueStore: %w", err)
	}
	return nil
}

// plan is what makes the store equal to pairs (deletes only when prune).
func plan(have map[string]string, pairs []token.KeyPair, prune bool) (puts []token.KeyPair, deletes, kept []string) {
	want := map[string]bool{}
	for _, p := range pairs {
		want[p.Kid] = true
		if v, ok := have[p.Kid]; ok && v == p.Secret {
			kept = append(kept, p.Kid)
		} else {
			puts = append(puts, p)
		}
	}
	if prune {
		for k := range have {
			if !want[k] {
				deletes = append(deletes, k)
			}
		}
		sort.Strings(deletes)
	}
	return puts, deletes, kept
}

func kids(pairs []token.KeyPair) []string {
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p.Kid
	}
	return out
}

func (e *edgeKeys) sync(ctx context.Context, dry bool) (edgeKeysReport, error) {
	pairs, err := e.ring(ctx)
	if err != nil {
		return edgeKeysReport{}, err
	}
	have, etag, err := e.stored(ctx)
	if err != nil {
		return edgeKeysReport{}, err
	}
	puts, deletes, kept := plan(have, pairs, true)
	rep := edgeKeysReport{Kids: kids(pairs), Put: kids(puts), Deleted: deletes, Kept: kept}
	if dry {
		return rep, nil
	}
	return rep, e.update(ctx, etag, puts, deletes)
}

// rotate puts a new key at the edge, then makes it the signing key of the
// secret: no pass is ever signed by a kid the edge does not know.
func (e *edgeKeys) rotate(ctx context.Context, kid string, dry bool) (edgeKeysReport, error) {
	pairs, err := e.ring(ctx)
	if err != nil {
		return edgeKeysReport{}, err
	}
	if kid == "" {
		kid = nextKid(pairs)
	}
	for _, p := range pairs {
		if p.Kid == kid {
			return edgeKeysReport{}, fmt.Errorf("kid %q is already in the ring", kid)
		}
	}
	next := append([]token.KeyPair{{Kid: kid, Secret: token.RandomSecret()}}, pairs...)
	have, etag, err := e.stored(ctx)
	if err != nil {
		return edgeKeysReport{}, err
	}
	puts, _, kept := plan(have, next, false)
	rep := edgeKeysReport{Kids: kids(next), Put: kids(puts), Kept: kept,
		Next: fmt.Sprintf("Lambdas sign with %s from their next cold start and Tier 2 tasks at their next start (aws ecs update-service --force-new-deployment); once the pass lifetime (VWR_TIER1_TOKEN_TTL) has passed after that, retire the old kid: vwr admin edge-keys retire -kid %s", kid, pairs[0].Kid)}
	if dry {
		return rep, nil
	}
	if err := e.update(ctx, etag, puts, nil); err != nil {
		return rep, err
	}
	return rep, e.writeRing(ctx, next)
}

// retire drops a kid from the secret, then from the edge.
func (e *edgeKeys) retire(ctx context.Context, kid string, dry bool) (edgeKeysReport, error) {
	pairs, err := e.ring(ctx)
	if err != nil {
		return edgeKeysReport{}, err
	}
	var rest []token.KeyPair
	for _, p := range pairs {
		if p.Kid != kid {
			rest = append(rest, p)
		}
	}
	switch {
	case len(rest) == len(pairs):
		return edgeKeysReport{}, fmt.Errorf("kid %q is not in the ring (%s)", kid, strings.Join(kids(pairs), ", "))
	case pairs[0].Kid == kid:
		return edgeKeysReport{}, fmt.Errorf("kid %q signs new passes; rotate first", kid)
	}
	have, etag, err := e.stored(ctx)
	if err != nil {
		return edgeKeysReport{}, err
	}
	puts, deletes, kept := plan(have, rest, true)
	rep := edgeKeysReport{Kids: kids(rest), Put: kids(puts), Deleted: deletes, Kept: kept}
	if dry {
		return rep, nil
	}
	if err := e.writeRing(ctx, rest); err != nil {
		return rep, err
	}
	return rep, e.update(ctx, etag, puts, deletes)
}

// nextKid is k<N+1> for the highest k<N> in the ring (k1 when none).
func nextKid(pairs []token.KeyPair) string {
	n := 0
	for _, p := range pairs {
		if v, err := strconv.Atoi(strings.TrimPrefix(p.Kid, "k")); err == nil && strings.HasPrefix(p.Kid, "k") && v > n {
			n = v
		}
	}
	return "k" + strconv.Itoa(n+1)
}

func writeReport(w io.Writer, rep edgeKeysReport) {
	for _, l := range []*[]string{&rep.Kids, &rep.Put, &rep.Deleted, &rep.Kept} {
		if *l == nil {
			*l = []string{}
		}
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}
