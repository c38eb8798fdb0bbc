package results

import "context"

// PGExec runs one statement on a PostgreSQL store's connection (tests plant rows).
func PGExec(ctx context.Context, st Store, sql string) error {
	_, err := st.(*PGStore).conn.Exec(ctx, sql)
	return err
}
