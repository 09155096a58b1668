package dynamotable_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/vwr-go/vwr/internal/dynamotable"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestCreateOnMoto(t *testing.T) {
	t.Parallel()
	db := dynamodb.NewFromConfig(awstest.Config(testenv.DynamoDB(t)))
	ctx := context.Background()
	id := testenv.UniqueID(t)
	specs := []dynamotable.Spec{
		{Name: id + "-hash", Hash: dynamotable.Key{Name: "id", Type: types.ScalarAttributeTypeS}, TTLAttribute: "ttl"},
		{
			Name:  id + "-range",
			Hash:  dynamotable.Key{Name: "pk", Type: types.ScalarAttributeTypeS},
			Range: dynamotable.Key{Name: "minute", Type: types.ScalarAttributeTypeN},
		},
	}
	for i := range 2 { // the second run finds both tables and leaves them be
		if err := dynamotable.Create(ctx, db, specs...); err != nil {
			t.Fatalf("Create #%d: %v", i+1, err)
		}
	}
	cases := []struct {
		table, schema string
		ttl           string
	}{
		{specs[0].Name, "id:S:HASH", "ttl"},
		{specs[1].Name, "pk:S:HASH minute:N:RANGE", ""},
	}
	for _, tc := range cases {
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tc.table)})
		if err != nil {
			t.Fatal(err)
		}
		attrTypes := map[string]types.ScalarAttributeType{}
		for _, a := range out.Table.AttributeDefinitions {
			attrTypes[aws.ToString(a.AttributeName)] = a.AttributeType
		}
		var got string
		for i, k := range out.Table.KeySchema {
			if i > 0 {
				got += " "
			}
			n := aws.ToString(k.AttributeName)
			got += n + ":" + string(attrTypes[n]) + ":" + string(k.KeyType)
		}
		if got != tc.schema {
			t.Errorf("%s key schema = %q, want %q", tc.table, got, tc.schema)
		}
		if bm := out.Table.BillingModeSummary; bm == nil || bm.BillingMode != "PAY_PER_REQUEST" {
			t.Errorf("%s billing = %+v, want PAY_PER_REQUEST", tc.table, bm)
		}
		ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tc.table)})
		if err != nil {
			t.Fatal(err)
		}
		d := ttl.TimeToLiveDescription
		on := d != nil && d.TimeToLiveStatus == "ENABLED"
		if on != (tc.ttl != "") || (on && aws.ToString(d.AttributeName) != tc.ttl) {
			t.Errorf("%s TTL = %+v, want attribute %q", tc.table, d, tc.ttl)
		}
	}
}

// fakeAPI answers CreateTable and UpdateTimeToLive with fixed errors.
type fakeAPI struct {
	create, ttl error
	ttlCalls    int
}

func (f *fakeAPI) CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return &dynamodb.CreateTableOutput{}, f.create
}

func (f *fakeAPI) UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	f.ttlCalls++
	return &dynamodb.UpdateTimeToLiveOutput{}, f.ttl
}

func TestCreateErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	spec := dynamotable.Spec{Name: "t", Hash: dynamotable.Key{Name: "id", Type: types.ScalarAttributeTypeS}, TTLAttribute: "ttl"}
	cases := []struct {
		name     string
		api      fakeAPI
		spec     dynamotable.Spec
		wantErr  string // "": success; else a substring of the error
		ttlCalls int
	}{
		{name: "existing table still gets TTL", api: fakeAPI{create: &types.ResourceInUseException{}}, spec: spec, ttlCalls: 1},
		{name: "TTL already enabled", api: fakeAPI{ttl: &smithy.GenericAPIError{Code: "ValidationException", Message: "TimeToLive is already enabled"}}, spec: spec, ttlCalls: 1},
		{name: "other TTL validation error", api: fakeAPI{ttl: &smithy.GenericAPIError{Code: "ValidationException", Message: "bad attribute"}}, spec: spec, wantErr: "enable TTL on t", ttlCalls: 1},
		{name: "create fails", api: fakeAPI{create: boom}, spec: spec, wantErr: "create t: boom"},
		{name: "no TTL attribute, no TTL call", spec: dynamotable.Spec{Name: "t", Hash: spec.Hash}},
		{name: "incomplete spec", spec: dynamotable.Spec{Name: "t"}, wantErr: "incomplete spec"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := tc.api
			err := dynamotable.Create(context.Background(), &api, tc.spec)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Create: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Create: %v, want an error containing %q", err, tc.wantErr)
			case tc.api.create == boom && !errors.Is(err, boom):
				t.Fatalf("Create: %v, want it to wrap %v", err, boom)
			}
			if api.ttlCalls != tc.ttlCalls {
				t.Errorf("UpdateTimeToLive calls = %d, want %d", api.ttlCalls, tc.ttlCalls)
			}
		})
	}
}
