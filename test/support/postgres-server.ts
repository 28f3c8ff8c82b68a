// The tests start PostgreSQL with the same starter as the bench and the simulator (scripts/lib).
export { type PostgresServer, postgresBinDir, startPostgres } from '../../scripts/lib/postgres-server.js'

/** A database of its own on the test server, so that a test's events never meet another file's: its URL, and its drop. */
export async function freshDatabase(serverUrl: string, prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const { postgresDb } = await import('../../src/adapters/postgres/postgres-js.js')
  const name = `${prefix}_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6)}`
  const admin = postgresDb(serverUrl, { max: 1 })
  await admin.query(`CREATE DATABASE ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.close()
    },
  }
}
