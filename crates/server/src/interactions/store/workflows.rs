//! The minimal workflow registry: workflows, variants with a HEAD, and immutable
//! revisions holding a config (`parameters`).

use gatehouse_wire::effective::MeasuredConfig;
use gatehouse_wire::JsonObject;
use sha2::{Digest, Sha256};

use super::InteractionStore;
use crate::db::{
    in_tx, measured_config_text, new_id, now_text, to_json_text, with_pool, RowExt, StoreError,
};

/// A workflow (artifact).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowRecord {
    /// UUID.
    pub id: String,
    /// Slug, unique in the project.
    pub slug: String,
}

/// A variant of a workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantRecord {
    /// UUID.
    pub id: String,
    /// The workflow it belongs to.
    pub workflow_id: String,
    /// Slug, unique in the workflow.
    pub slug: String,
    /// The variant's HEAD revision.
    pub head_revision_id: Option<String>,
}

/// An immutable revision.
#[derive(Debug, Clone, PartialEq)]
pub struct RevisionRecord {
    /// UUID.
    pub id: String,
    /// The workflow.
    pub workflow_id: String,
    /// The variant.
    pub variant_id: String,
    /// Short content hash.
    pub slug: String,
    /// 1, 2, ... within the variant.
    pub version: i64,
    /// The config, read from its stored text with its `json.dumps` measure (the stamp of
    /// a turn hydrated from this revision walks only what the redaction touches).
    pub parameters: MeasuredConfig,
}

fn revision_from_row(row: &impl RowExt) -> Result<RevisionRecord, StoreError> {
    Ok(RevisionRecord {
        id: row.text("id")?,
        workflow_id: row.text("workflow_id")?,
        variant_id: row.text("variant_id")?,
        slug: row.text("slug")?,
        version: row.int("version")?,
        parameters: measured_config_text(
            "workflow_revisions.parameters",
            &row.text("parameters")?,
        )?,
    })
}

fn variant_from_row(row: &impl RowExt) -> Result<VariantRecord, StoreError> {
    Ok(VariantRecord {
        id: row.text("id")?,
        workflow_id: row.text("workflow_id")?,
        slug: row.text("slug")?,
        head_revision_id: row.opt_text("head_revision_id")?,
    })
}

const REVISION_COLUMNS: &str = "id, workflow_id, variant_id, slug, version, parameters";
const VARIANT_COLUMNS: &str = "id, workflow_id, slug, head_revision_id";

impl InteractionStore {
    /// Create the workflow and variant when missing, commit a new revision with
    /// `parameters`, and move the variant's HEAD to it.
    pub async fn commit_revision(
        &self,
        project_id: &str,
        workflow_slug: &str,
        variant_slug: &str,
        parameters: &JsonObject,
    ) -> Result<(WorkflowRecord, VariantRecord, RevisionRecord), StoreError> {
        let now = now_text();
        let params_text = to_json_text(parameters);
        in_tx!(self.db, tx => {
            sqlx::query(
                "INSERT INTO workflows (id, project_id, slug, created_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (project_id, slug) DO NOTHING",
            )
            .bind(new_id())
            .bind(project_id)
            .bind(workflow_slug)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
            let row = sqlx::query("SELECT id, slug FROM workflows WHERE project_id = $1 AND slug = $2")
                .bind(project_id)
                .bind(workflow_slug)
                .fetch_one(&mut *tx)
                .await?;
            let workflow = WorkflowRecord { id: row.text("id")?, slug: row.text("slug")? };
            sqlx::query(
                "INSERT INTO workflow_variants (id, project_id, workflow_id, slug, created_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (workflow_id, slug) DO NOTHING",
            )
            .bind(new_id())
            .bind(project_id)
            .bind(&workflow.id)
            .bind(variant_slug)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
            let sql = format!("SELECT {VARIANT_COLUMNS} FROM workflow_variants WHERE workflow_id = $1 AND slug = $2");
            let row = sqlx::query(&sql)
                .bind(&workflow.id)
                .bind(variant_slug)
                .fetch_one(&mut *tx)
                .await?;
            let mut variant = variant_from_row(&row)?;
            let row = sqlx::query(
                "SELECT COALESCE(MAX(version), 0) AS v FROM workflow_revisions WHERE variant_id = $1",
            )
            .bind(&variant.id)
            .fetch_one(&mut *tx)
            .await?;
            let version = row.int("v")? + 1;
            let id = new_id();
            let digest = Sha256::digest(format!("{id}:{params_text}").as_bytes());
            let slug = hex::encode(digest)[..12].to_string();
            sqlx::query(
                "INSERT INTO workflow_revisions (id, project_id, workflow_id, variant_id, slug, \
                 version, parameters, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(&id)
            .bind(project_id)
            .bind(&workflow.id)
            .bind(&variant.id)
            .bind(&slug)
            .bind(version)
            .bind(&params_text)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
            sqlx::query("UPDATE workflow_variants SET head_revision_id = $1 WHERE id = $2")
                .bind(&id)
                .bind(&variant.id)
                .execute(&mut *tx)
                .await?;
            variant.head_revision_id = Some(id.clone());
            let revision = RevisionRecord {
                id,
                workflow_id: workflow.id.clone(),
                variant_id: variant.id.clone(),
                slug,
                version,
                parameters: MeasuredConfig::from_object(parameters.clone()),
            };
            Ok((workflow, variant, revision))
        })
    }

    /// A workflow of the project by id or slug.
    pub async fn find_workflow(
        &self,
        project_id: &str,
        id: Option<&str>,
        slug: Option<&str>,
    ) -> Result<Option<WorkflowRecord>, StoreError> {
        let (sql, key) = match (id, slug) {
            (Some(id), _) => (
                "SELECT id, slug FROM workflows WHERE project_id = $1 AND id = $2",
                id,
            ),
            (None, Some(slug)) => (
                "SELECT id, slug FROM workflows WHERE project_id = $1 AND slug = $2",
                slug,
            ),
            (None, None) => return Ok(None),
        };
        with_pool!(self.db, pool => {
            let row = sqlx::query(sql).bind(project_id).bind(key).fetch_optional(pool).await?;
            match row {
                Some(row) => Ok(Some(WorkflowRecord { id: row.text("id")?, slug: row.text("slug")? })),
                None => Ok(None),
            }
        })
    }

    /// A variant of the project by id, or by slug (within `workflow_id` when given).
    pub async fn find_variant(
        &self,
        project_id: &str,
        id: Option<&str>,
        slug: Option<&str>,
        workflow_id: Option<&str>,
    ) -> Result<Option<VariantRecord>, StoreError> {
        let mut sql =
            format!("SELECT {VARIANT_COLUMNS} FROM workflow_variants WHERE project_id = $1");
        let mut binds = vec![project_id.to_string()];
        match (id, slug) {
            (Some(id), _) => {
                binds.push(id.to_string());
                sql.push_str(" AND id = $2");
            }
            (None, Some(slug)) => {
                binds.push(slug.to_string());
                sql.push_str(" AND slug = $2");
                if let Some(workflow_id) = workflow_id {
                    binds.push(workflow_id.to_string());
                    sql.push_str(" AND workflow_id = $3");
                }
            }
            (None, None) => match workflow_id {
                // A workflow reference alone: its first variant.
                Some(workflow_id) => {
                    binds.push(workflow_id.to_string());
                    sql.push_str(" AND workflow_id = $2");
                }
                None => return Ok(None),
            },
        }
        sql.push_str(" ORDER BY id LIMIT 1");
        with_pool!(self.db, pool => {
            let mut query = sqlx::query(&sql);
            for bind in &binds {
                query = query.bind(bind);
            }
            let row = query.fetch_optional(pool).await?;
            row.as_ref().map(variant_from_row).transpose()
        })
    }

    /// A revision of the project by id.
    pub async fn get_revision(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<RevisionRecord>, StoreError> {
        let sql = format!(
            "SELECT {REVISION_COLUMNS} FROM workflow_revisions WHERE project_id = $1 AND id = $2"
        );
        with_pool!(self.db, pool => {
            let row = sqlx::query(&sql).bind(project_id).bind(id).fetch_optional(pool).await?;
            row.as_ref().map(revision_from_row).transpose()
        })
    }

    /// A revision of the project by slug, or by version within a variant.
    pub async fn find_revision(
        &self,
        project_id: &str,
        slug: Option<&str>,
        variant_id: Option<&str>,
        version: Option<i64>,
    ) -> Result<Option<RevisionRecord>, StoreError> {
        with_pool!(self.db, pool => {
            let row = if let Some(slug) = slug {
                let sql = format!("SELECT {REVISION_COLUMNS} FROM workflow_revisions WHERE project_id = $1 AND slug = $2");
                sqlx::query(&sql).bind(project_id).bind(slug).fetch_optional(pool).await?
            } else if let (Some(variant_id), Some(version)) = (variant_id, version) {
                let sql = format!("SELECT {REVISION_COLUMNS} FROM workflow_revisions WHERE project_id = $1 AND variant_id = $2 AND version = $3");
                sqlx::query(&sql).bind(project_id).bind(variant_id).bind(version).fetch_optional(pool).await?
            } else {
                None
            };
            row.as_ref().map(revision_from_row).transpose()
        })
    }
}
