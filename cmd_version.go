package main

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/spf13/cobra"

	"seckill-harness/internal/buildinfo"
)

// versionText is what both `version` and `--version` print.
func versionText(cmd *cobra.Command) string {
	return buildinfo.Text(buildinfo.Read(), buildinfo.FindLocalRedis(cmd.Context(), ""))
}

// versionFunc registers the version template's function once: roots made
// at the same time (tests run the CLI in parallel) raced on cobra's map.
var versionFunc sync.Once

// addVersion gives root a --version flag and a version command (with
// --json: {"harness": build info, "local_redis_server": the binary on PATH}).
func addVersion(root *cobra.Command) {
	root.Version = buildinfo.Read().Version
	versionFunc.Do(func() { // cobra's template funcs are one global map: register once, not per root
		cobra.AddTemplateFunc("harnessVersionText", versionText)
	})
	root.SetVersionTemplate(`{{harnessVersionText .}}`)
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the harness version (build info), Go, go-redis and the local redis-server versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !asJSON {
				fmt.Fprint(cmd.OutOrStdout(), versionText(cmd))
				return nil
			}
			v := struct {
				Harness    buildinfo.Info       `json:"harness"`
				LocalRedis buildinfo.LocalRedis `json:"local_redis_server"`
			}{buildinfo.Read(), buildinfo.FindLocalRedis(cmd.Context(), "")}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	root.AddCommand(cmd)
}
