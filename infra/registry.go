package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecr"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// RegistryStackProps configures the registry. It sits in Tier 1's region.
type RegistryStackProps struct {
	awscdk.StackProps
	// ExistingRepository names a repository to use instead of creating one.
	ExistingRepository string
}

// RegistryStack holds the ECR repository of the Tier 2 image. It is its own
// stack so that `make deploy` can create it, push the image, and only then
// deploy Tier 2, whose service needs the image to start.
type RegistryStack struct {
	awscdk.Stack
	Repository awsecr.IRepository
}

// QueueRepositoryName is the repository the registry stack creates.
const QueueRepositoryName = "vwr-queue"

// KeptImages is how many images the repository keeps (older ones expire).
const KeptImages = 30

// NewRegistryStack builds the stack.
func NewRegistryStack(scope constructs.Construct, id string, props *RegistryStackProps) *RegistryStack {
	sp := props.StackProps
	sp.Description = jsii.String("vwr registry: the ECR repository of the Tier 2 queue image")
	stack := awscdk.NewStack(scope, &id, &sp)
	s := &RegistryStack{Stack: stack}
	if props.ExistingRepository != "" {
		s.Repository = awsecr.Repository_FromRepositoryName(stack, jsii.String("QueueRepository"), jsii.String(props.ExistingRepository))
	} else {
		s.Repository = awsecr.NewRepository(stack, jsii.String("QueueRepository"), &awsecr.RepositoryProps{
			RepositoryName: jsii.String(QueueRepositoryName),
			// A tag names one build for good: a deployment cannot change
			// under a running service, and a rollback finds what it left.
			ImageTagMutability: awsecr.TagMutability_IMMUTABLE,
			ImageScanOnPush:    jsii.Bool(true),
			Encryption:         awsecr.RepositoryEncryption_AES_256(),
			LifecycleRules:     &[]*awsecr.LifecycleRule{{Description: jsii.String("keep the last images"), MaxImageCount: jsii.Number(KeptImages)}},
			// Kept on stack deletion, with its images (docs/deploy.md, tear-down).
			RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
		})
	}
	awscdk.NewCfnOutput(stack, jsii.String("QueueRepositoryUri"), &awscdk.CfnOutputProps{
		Value: s.Repository.RepositoryUri(), Description: jsii.String("Push services/queue/Dockerfile here (make deploy does)"),
	})
	return s
}
