package trend

// JudgePage is judgePage for the external tests of this directory
// (realruns_test.go, which imports reports/results and so cannot be in
// package trend).
var JudgePage = judgePage
