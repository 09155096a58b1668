package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// VWR is the whole deployment: five stacks.
type VWR struct {
	Registry  *RegistryStack // nil when Config.Tier2 is false
	FrontDoor *FrontDoorStack
	Tier1     *Tier1Stack
	Tier2     *Tier2Stack // nil when Config.Tier2 is false
	Ops       *OpsStack
}

// NewVWR adds the stacks to scope. Tier 1, Tier 2 and Ops sit in
// cfg.Region; the front door sits in us-east-1 and reads the API (and ALB)
// domain through CDK's cross-region references (SSM parameters written by
// the producing stack, read by a custom resource in the consuming one).
func NewVWR(scope constructs.Construct, cfg Config) *VWR {
	env := func(region string) *awscdk.StackProps {
		e := &awscdk.Environment{Region: jsii.String(region)}
		if cfg.Account != "" {
			e.Account = jsii.String(cfg.Account)
		}
		return &awscdk.StackProps{Env: e, CrossRegionReferences: jsii.Bool(true)}
	}
	v := &VWR{}
	v.Tier1 = NewTier1Stack(scope, "VwrTier1", &Tier1StackProps{
		StackProps:                  *env(cfg.Region),
		LambdaDir:                   cfg.LambdaDir,
		AdvancerTicks:               cfg.AdvancerTicks,
		AdvancerTickSeconds:         cfg.AdvancerTickSeconds,
		AdvancerReservedConcurrency: cfg.AdvancerReservedConcurrency,
	})
	fd := &FrontDoorStackProps{
		StackProps:       *env(FrontDoorRegion),
		APIEndpoint:      v.Tier1.API.ApiEndpoint(),
		ProtectedOrigin:  cfg.ProtectedOrigin,
		StaticDir:        cfg.StaticDir,
		EdgeDir:          cfg.EdgeDir,
		OriginVerifyName: v.Tier1.OriginVerifyName,
		DomainName:       cfg.DomainName,
		CertificateARN:   cfg.CertificateARN,
	}
	if cfg.Tier2 {
		rp := &RegistryStackProps{StackProps: *env(cfg.Region), ExistingRepository: cfg.QueueRepository}
		v.Registry = NewRegistryStack(scope, "VwrRegistry", rp)
		v.Tier2 = NewTier2Stack(scope, "VwrTier2", &Tier2StackProps{
			Repository:       v.Registry.Repository,
			StackProps:       *env(cfg.Region),
			Tier1KeysARN:     v.Tier1.KeysSecret.SecretArn(),
			AdmittedQueue:    v.Tier1.AdmittedQueue,
			EventsTable:      v.Tier1.Events,
			PositionsTable:   v.Tier1.Positions,
			OriginPrefixList: cfg.OriginPrefixList,
		})
		fd.Tier2Domain = v.Tier2.Service.LoadBalancer().LoadBalancerDnsName()
	}
	v.FrontDoor = NewFrontDoorStack(scope, "VwrFrontDoor", fd)
	// The front door reads the origin-verify secret's replica by name: the
	// secret must exist before it deploys.
	v.FrontDoor.AddDependency(v.Tier1.Stack, jsii.String("the origin-verify secret's us-east-1 replica"))
	v.Ops = NewOpsStack(scope, "VwrOps", &OpsStackProps{StackProps: *env(cfg.Region), Tier1: v.Tier1, Tier2: v.Tier2, FrontDoor: v.FrontDoor})
	return v
}
