package cfntemplate

import "testing"

func TestShortFormIntrinsicsBecomeLongForm(t *testing.T) {
	t.Parallel()
	tpl, err := Parse([]byte(`
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Name: !Sub "${AWS::StackName}-fn"
      Table: !Ref EventsTable
      Arn: !GetAtt EventsTable.Arn
      Cond: !If [IsProd, 1, 2]
      Plain: [arm64]
      Number: 60
      Flag: false
`))
	if err != nil {
		t.Fatal(err)
	}
	fn := tpl.Resources("AWS::Serverless::Function")["Fn"]
	for path, want := range map[string]string{
		"Name":   `{"Fn::Sub":"${AWS::StackName}-fn"}`,
		"Table":  `{"Ref":"EventsTable"}`,
		"Arn":    `{"Fn::GetAtt":["EventsTable","Arn"]}`,
		"Cond":   `{"Fn::If":["IsProd",1,2]}`,
		"Plain":  `["arm64"]`,
		"Number": `60`,
		"Flag":   `false`,
	} {
		if got := String(Get(fn, "Properties", path)); got != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
	if _, err := Parse([]byte("a: 1\na: 2\n")); err == nil {
		t.Error("a repeated key was accepted")
	}
}
