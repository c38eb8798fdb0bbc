package cmdline

import (
	"github.com/spf13/cobra"

	"seckill-harness/internal/fileref"
)

// AddFilesRoot gives every command --files-root DIR: the directory the
// paths written inside scenario, adapter, mapping and generator.json
// files may reach
// (fileref.SetRoot). Without it each such path stays inside the directory
// of the file that names it. Paths given on the command line are the
// user's own and are not bound by it. Call after AddLogLevel: it runs
// that command's pre-run first.
func AddFilesRoot(root *cobra.Command) {
	root.PersistentFlags().String("files-root", "", "the directory every path written inside a scenario, adapter, mapping or generator.json file must stay in (default: the directory of the file that names it)")
	_ = root.MarkPersistentFlagDirname("files-root")
	prev := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(cmd, args); err != nil {
				return err
			}
		}
		dir, _ := cmd.Flags().GetString("files-root")
		return fileref.SetRoot(dir)
	}
}
