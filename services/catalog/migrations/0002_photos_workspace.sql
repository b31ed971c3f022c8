-- Fair photo fetching (docs/catalog.md "Fair scheduling"): the pipeline
-- claims per workspace, so a photo row names its workspace (the property's, which
-- never changes) and pending photos are indexed by it: the claim finds the workspaces
-- with pending photos by a skip scan (one index probe per workspace) and takes each
-- one's oldest first, however long one workspace's backlog is.
--
-- Expand only: the column stays nullable, because the previous release (running
-- beside this one during an upgrade) inserts photos without it. The pipeline fills
-- it for such rows before it claims (photo-pipeline.ts, adoptUnassigned); a later
-- release may make it NOT NULL once no previous release writes photos.
alter table photos add column workspace_id uuid;

update photos p set workspace_id = pr.workspace_id
from properties pr
where pr.id = p.property_id and p.workspace_id is null;

create index photos_pending_by_workspace_idx on photos (workspace_id, created_at) where state = 'pending';
-- Rows the previous release queued, until the pipeline gives them their workspace.
create index photos_unassigned_idx on photos (property_id) where workspace_id is null and state = 'pending';
