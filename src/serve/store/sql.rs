//! One statement, two drivers. A [`Statement`] holds its SQL text (`$1`, `$2` ...
//! placeholders, valid on SQLite and PostgreSQL alike) and its arguments as [`Value`]s;
//! [`Backend`] runs it with rusqlite on SQLite (off the async runtime, on a pooled
//! connection) or with sqlx on PostgreSQL. What comes back is the rows a statement changed,
//! or rows decoded into tuples ([`Record`]): a scalar is a 1-tuple.

use rusqlite::types::{ToSqlOutput, ValueRef};
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;

use super::{Backend, StoreError};

/// An argument of a [`Statement`], of a type both drivers bind the same way.
#[derive(Debug, Clone)]
pub(super) enum Value {
    Int(i64),
    /// A PostgreSQL `int4`, where the statement needs one (`substr`'s length); an integer
    /// on SQLite.
    Int4(i32),
    Text(String),
    OptText(Option<String>),
    Bool(bool),
}

impl From<i64> for Value {
    fn from(value: i64) -> Value {
        Value::Int(value)
    }
}

impl From<i32> for Value {
    fn from(value: i32) -> Value {
        Value::Int4(value)
    }
}

impl From<&str> for Value {
    fn from(value: &str) -> Value {
        Value::Text(value.to_string())
    }
}

impl From<&String> for Value {
    fn from(value: &String) -> Value {
        Value::Text(value.clone())
    }
}

impl From<Option<&str>> for Value {
    fn from(value: Option<&str>) -> Value {
        Value::OptText(value.map(str::to_string))
    }
}

impl From<bool> for Value {
    fn from(value: bool) -> Value {
        Value::Bool(value)
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Int(value) => ValueRef::Integer(*value),
            Value::Int4(value) => ValueRef::Integer(i64::from(*value)),
            Value::Text(value) => ValueRef::Text(value.as_bytes()),
            Value::OptText(Some(value)) => ValueRef::Text(value.as_bytes()),
            Value::OptText(None) => ValueRef::Null,
            Value::Bool(value) => ValueRef::Integer(i64::from(*value)),
        }))
    }
}

/// What a row decodes into on both drivers: a tuple of `i64`, `bool`, `String`, `Vec<u8>`
/// and their `Option`s.
pub(super) trait Record:
    for<'r> sqlx::FromRow<'r, PgRow>
    + for<'a> TryFrom<&'a rusqlite::Row<'a>, Error = rusqlite::Error>
    + Send
    + Unpin
    + 'static
{
}

impl<T> Record for T where
    T: for<'r> sqlx::FromRow<'r, PgRow>
        + for<'a> TryFrom<&'a rusqlite::Row<'a>, Error = rusqlite::Error>
        + Send
        + Unpin
        + 'static
{
}

/// A statement's text and its arguments: `bind`'s `n`th call gives `$n`.
#[derive(Debug, Clone)]
pub(super) struct Statement {
    sql: &'static str,
    args: Vec<Value>,
}

/// The names of the first placeholders, so that binding them allocates nothing.
const NAMES: [&str; 12] = [
    "$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$9", "$10", "$11", "$12",
];

impl Statement {
    pub(super) fn new(sql: &'static str) -> Statement {
        Statement {
            sql,
            args: Vec::new(),
        }
    }

    /// The next argument (`$1` first).
    pub(super) fn bind(mut self, value: impl Into<Value>) -> Statement {
        self.args.push(value.into());
        self
    }

    /// The statement for sqlx on PostgreSQL, each argument bound as its own type.
    fn postgres(&self) -> Query<'_, sqlx::Postgres, PgArguments> {
        self.args
            .iter()
            .fold(sqlx::query(self.sql), |query, value| match value {
                Value::Int(value) => query.bind(*value),
                Value::Int4(value) => query.bind(*value),
                Value::Text(value) => query.bind(value.as_str()),
                Value::OptText(value) => query.bind(value.as_deref()),
                Value::Bool(value) => query.bind(*value),
            })
    }

    /// The statement prepared (from the connection's cache) with its arguments bound by
    /// name: SQLite numbers `$n` parameters in the order they first appear in the text,
    /// which is not `n` where a statement uses `$3` before `$1`.
    fn prepare<'c>(
        &self,
        conn: &'c rusqlite::Connection,
    ) -> rusqlite::Result<rusqlite::CachedStatement<'c>> {
        let mut statement = conn.prepare_cached(self.sql)?;
        if statement.parameter_count() != self.args.len() {
            return Err(rusqlite::Error::InvalidParameterCount(
                self.args.len(),
                statement.parameter_count(),
            ));
        }
        for (n, value) in self.args.iter().enumerate() {
            let owned;
            let name = match NAMES.get(n) {
                Some(name) => *name,
                None => {
                    owned = format!("${}", n + 1);
                    owned.as_str()
                }
            };
            let index = statement
                .parameter_index(name)?
                .ok_or_else(|| rusqlite::Error::InvalidParameterName(name.to_string()))?;
            statement.raw_bind_parameter(index, value)?;
        }
        Ok(statement)
    }

    /// Runs the statement to its end on SQLite; the rows it changed.
    pub(super) fn execute_sqlite(&self, conn: &rusqlite::Connection) -> rusqlite::Result<u64> {
        let mut statement = self.prepare(conn)?;
        if statement.column_count() == 0 {
            return Ok(statement.raw_execute()? as u64);
        }
        // A statement that returns rows (`SELECT 1`): stepped through, like sqlx does.
        let changes = !statement.readonly();
        let mut rows = statement.raw_query();
        while rows.next()?.is_some() {}
        Ok(if changes { conn.changes() } else { 0 })
    }

    /// The rows of the statement on SQLite, the first `limit` of them decoded. It is
    /// stepped to its end all the same: a write (`UPDATE ... RETURNING`) commits there, and
    /// an error at that point is reported, not lost in the statement's reset.
    pub(super) fn rows_sqlite<R: Record>(
        &self,
        conn: &rusqlite::Connection,
        limit: usize,
    ) -> rusqlite::Result<Vec<R>> {
        let mut statement = self.prepare(conn)?;
        let mut rows = statement.raw_query();
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            if out.len() < limit {
                out.push(R::try_from(row)?);
            }
        }
        Ok(out)
    }
}

impl Backend {
    /// Runs `statement`; the rows it changed.
    pub(super) async fn execute(&self, statement: Statement) -> Result<u64, StoreError> {
        match self {
            Backend::Sqlite(db) => db.run(move |conn| statement.execute_sqlite(conn)).await,
            Backend::Postgres(pg) => Ok(statement
                .postgres()
                .execute(&pg.pool)
                .await?
                .rows_affected()),
        }
    }

    /// The first row of `statement`, if any.
    pub(super) async fn fetch_optional<R: Record>(
        &self,
        statement: Statement,
    ) -> Result<Option<R>, StoreError> {
        match self {
            Backend::Sqlite(db) => db.fetch_optional(statement).await,
            Backend::Postgres(pg) => {
                let row = statement.postgres().fetch_optional(&pg.pool).await?;
                Ok(row.map(|row| R::from_row(&row)).transpose()?)
            }
        }
    }

    /// The first row of `statement` (an error if there is none).
    pub(super) async fn fetch_one<R: Record>(&self, statement: Statement) -> Result<R, StoreError> {
        match self {
            Backend::Sqlite(db) => db
                .fetch_optional(statement)
                .await?
                .ok_or(StoreError::Sqlite(rusqlite::Error::QueryReturnedNoRows)),
            Backend::Postgres(pg) => {
                let row = statement.postgres().fetch_one(&pg.pool).await?;
                Ok(R::from_row(&row)?)
            }
        }
    }

    /// Every row of `statement`.
    pub(super) async fn fetch_all<R: Record>(
        &self,
        statement: Statement,
    ) -> Result<Vec<R>, StoreError> {
        match self {
            Backend::Sqlite(db) => {
                db.run(move |conn| statement.rows_sqlite(conn, usize::MAX))
                    .await
            }
            Backend::Postgres(pg) => {
                let rows = statement.postgres().fetch_all(&pg.pool).await?;
                Ok(rows
                    .iter()
                    .map(R::from_row)
                    .collect::<Result<Vec<R>, sqlx::Error>>()?)
            }
        }
    }

    /// The first column of the first row of `statement`, if any.
    pub(super) async fn scalar_optional<T>(
        &self,
        statement: Statement,
    ) -> Result<Option<T>, StoreError>
    where
        (T,): Record,
    {
        Ok(self
            .fetch_optional::<(T,)>(statement)
            .await?
            .map(|(value,)| value))
    }

    /// The first column of the first row of `statement`.
    pub(super) async fn scalar<T>(&self, statement: Statement) -> Result<T, StoreError>
    where
        (T,): Record,
    {
        Ok(self.fetch_one::<(T,)>(statement).await?.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_bound_by_their_number_whatever_order_the_text_names_them_in() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (a TEXT, b TEXT, c INTEGER, d INTEGER)")
            .unwrap();
        let insert = Statement::new("INSERT INTO t (c, a, b, d) VALUES ($3, $1, $2, $4)")
            .bind("one")
            .bind(None::<&str>)
            .bind(3_i64)
            .bind(true);
        assert_eq!(insert.execute_sqlite(&conn).unwrap(), 1);
        // The same placeholder twice is one parameter.
        let select = Statement::new(
            "SELECT a, b, c, d FROM t WHERE c = $2 AND ($1 IS NULL OR a = $1) AND c = $2",
        )
        .bind("one")
        .bind(3_i32);
        let rows: Vec<(String, Option<String>, i64, bool)> =
            select.rows_sqlite(&conn, usize::MAX).unwrap();
        assert_eq!(rows, vec![("one".to_string(), None, 3, true)]);
        let wrong = Statement::new("SELECT $1").bind(1_i64).bind(2_i64);
        assert!(matches!(
            wrong.execute_sqlite(&conn),
            Err(rusqlite::Error::InvalidParameterCount(2, 1))
        ));
        assert_eq!(Statement::new("SELECT 1").execute_sqlite(&conn).unwrap(), 0);
    }
}
