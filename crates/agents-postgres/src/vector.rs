pub struct PgVectorBackend;
