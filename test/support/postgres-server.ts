// The tests start PostgreSQL with the same starter as the bench and the simulator (scripts/lib).
export { type PostgresServer, postgresBinDir, startPostgres } from '../../scripts/lib/postgres-server.js'
