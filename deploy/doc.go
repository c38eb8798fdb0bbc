// Package deploy holds no code: its tests check the deployment examples
// beside it against the harness's contracts.
//
//   - kubernetes/: an Indexed Job of N load generators (pod i runs
//     `seckill-harness run SCENARIO --generator i/N --activity NAME
//     --cluster redis://… --out /out/gen-i` on a shared ReadWriteMany
//     claim), the Job that merges them (`seckill-harness verify … /out/gen-0
//     … /out/gen-(N-1)`) and the claim. kube_test.go decodes them strictly
//     with the Kubernetes API types (an unknown or misspelt field fails),
//     checks that the Jobs agree with each other (Indexed, completions ==
//     parallelism == the N of --generator, one verify directory per index)
//     and runs their arguments, as written, against a local cluster.
//   - ../.github/workflows/generators.yml: the same split as a GitHub
//     Actions matrix over the generator index and a verify job;
//     workflow_test.go checks the matrix against --generator.
package deploy
