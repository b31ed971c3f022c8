{{/*
Names, labels, image and environment shared by every template. All defines are
namespaced "psync."; per-component resources are rendered by the defines in
_component.tpl, one thin file per resource under templates/<component>/.
*/}}

{{/* Chart name, or nameOverride. */}}
{{- define "psync.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Release-scoped base name: fullnameOverride, else "<release>" when the release name
already contains the chart name, else "<release>-<chart>". Component objects append
"-<component>", so the base is kept to 52 characters.
*/}}
{{- define "psync.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "<chart>-<version>" for the helm.sh/chart label. */}}
{{- define "psync.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The components that run as Deployments, in a fixed order. */}}
{{- define "psync.components" -}}
gateway identity catalog calendar notifications
{{- end -}}

{{/* The internal services (everything but the gateway). */}}
{{- define "psync.services" -}}
identity catalog calendar notifications
{{- end -}}

{{/*
Fully-qualified gRPC service name a component reports in grpc.health.v1 (fixed by
the proto packages, so not a value).
*/}}
{{- define "psync.grpcServiceName" -}}
{{- $names := dict "identity" "psync.identity.v1.IdentityService" "catalog" "psync.catalog.v1.CatalogService" "calendar" "psync.calendar.v1.CalendarService" "notifications" "psync.notifications.v1.NotificationsService" -}}
{{- get $names . -}}
{{- end -}}

{{/* Name of a component's objects: "<fullname>-<component>". Call with (dict "root" $ "component" "identity"). */}}
{{- define "psync.componentName" -}}
{{- printf "%s-%s" (include "psync.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels every object carries. Call with (dict "root" $ "component" "identity"); component may be empty. */}}
{{- define "psync.labels" -}}
helm.sh/chart: {{ include "psync.chart" .root }}
{{ include "psync.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: partner-sync
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Labels of pod templates: like psync.labels but without helm.sh/chart, so a chart
version bump alone does not roll every pod. Call like psync.labels.
*/}}
{{- define "psync.podLabels" -}}
{{ include "psync.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: partner-sync
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Immutable selector labels: name, instance, and the component when given. */}}
{{- define "psync.selectorLabels" -}}
app.kubernetes.io/name: {{ include "psync.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{/* The image reference: repository@digest when a digest is set, else repository:tag (tag defaults to appVersion). */}}
{{- define "psync.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* ServiceAccount the Deployments run as. */}}
{{- define "psync.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "psync.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* ServiceAccount of the migration hook Job: its own hook-created one, or the existing named one. */}}
{{- define "psync.migrateServiceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- printf "%s-migrate" (include "psync.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Name of the ConfigMap holding the non-secret environment. */}}
{{- define "psync.configMapName" -}}
{{- printf "%s-config" (include "psync.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Default name of the operator-created Secret for every reference whose existingSecret is empty. */}}
{{- define "psync.defaultSecretName" -}}
{{- printf "%s-secrets" (include "psync.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
One env entry read from a Secret. Call with
(dict "root" $ "env" "DATABASE_URL" "ref" .Values.database).
*/}}
{{- define "psync.secretEnv" -}}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ default (include "psync.defaultSecretName" .root) .ref.existingSecret }}
      key: {{ .ref.existingSecretKey }}
      {{- if .optional }}
      optional: true
      {{- end }}
{{- end -}}

{{/* Pod-level security context. */}}
{{- define "psync.podSecurityContext" -}}
{{- toYaml .Values.podSecurityContext -}}
{{- end -}}

{{/* Container-level security context. */}}
{{- define "psync.containerSecurityContext" -}}
{{- toYaml .Values.containerSecurityContext -}}
{{- end -}}

{{/* The /tmp and DATA_DIR emptyDir volumes (the root file system is read-only). */}}
{{- define "psync.volumes" -}}
- name: tmp
  emptyDir:
    {{- with .Values.volumes.tmp.sizeLimit }}
    sizeLimit: {{ . }}
    {{- end }}
    {{- with .Values.volumes.tmp.medium }}
    medium: {{ . }}
    {{- end }}
- name: data
  emptyDir:
    {{- with .Values.volumes.data.sizeLimit }}
    sizeLimit: {{ . }}
    {{- end }}
{{- end -}}

{{- define "psync.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: data
  mountPath: {{ .Values.config.dataDir }}
{{- end -}}

{{/* A component's own internal certificate, key and CA (read-only) when internal TLS is on. Call with (dict "root" $ "component" "identity"). */}}
{{- define "psync.internalTlsVolume" -}}
{{- if .root.Values.internalTls.enabled -}}
- name: internal-tls
  secret:
    secretName: {{ include "psync.internalTlsSecretName" . }}
    # 0440, readable by the pod's group (fsGroup) only. Decimal: a YAML 1.2 reader
    # would take 0440 for four hundred and forty (0670 octal).
    defaultMode: 288
    items:
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
      - key: ca.crt
        path: ca.crt
{{- end -}}
{{- end -}}

{{- define "psync.internalTlsVolumeMount" -}}
{{- if .Values.internalTls.enabled -}}
- name: internal-tls
  mountPath: {{ .Values.internalTls.mountPath }}
  readOnly: true
{{- end -}}
{{- end -}}

{{/* A role's own NATS credentials file (read-only), when nats.credentials.<role>.existingSecret is set. Call with (dict "root" $ "component" "calendar"). */}}
{{- define "psync.natsCredentialsVolume" -}}
{{- $c := include "psync.natsCredentials" . | fromYaml -}}
{{- if $c.existingSecret -}}
- name: nats-credentials
  secret:
    secretName: {{ $c.existingSecret }}
    # 0440, readable by the pod's group (fsGroup) only. Decimal: a YAML 1.2 reader
    # would take 0440 for four hundred and forty (0670 octal).
    defaultMode: 288
    items:
      - key: {{ $c.existingSecretKey }}
        path: nats.creds
{{- end -}}
{{- end -}}

{{- define "psync.natsCredentialsVolumeMount" -}}
{{- $c := include "psync.natsCredentials" . | fromYaml -}}
{{- if $c.existingSecret -}}
- name: nats-credentials
  mountPath: {{ .root.Values.nats.credentialsMountPath }}
  readOnly: true
{{- end -}}
{{- end -}}

{{/* A role's nats.credentials entry as YAML ({} for a component that uses no NATS). Call with (dict "root" $ "component" "calendar"). */}}
{{- define "psync.natsCredentials" -}}
{{- if has .component (include "psync.natsRoles" .root | splitList " ") -}}
{{- toYaml (index .root.Values.nats.credentials .component) -}}
{{- else -}}
{}
{{- end -}}
{{- end -}}

{{/* Downward-API env giving traces and logs the pod's identity. Call with (dict "root" $ "component" "identity"). */}}
{{- define "psync.podEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: OTEL_SERVICE_NAME
  value: {{ printf "psync-%s" .component | quote }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ printf "k8s.pod.name=$(POD_NAME),k8s.namespace.name=$(POD_NAMESPACE),service.namespace=%s,service.version=%s" (include "psync.fullname" .root) (default .root.Chart.AppVersion .root.Values.image.tag) | quote }}
{{- end -}}

{{/* Extra plain env vars from a name→value map, sorted by name. */}}
{{- define "psync.extraEnv" -}}
{{- range $name, $value := . }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{/*
A NetworkPolicy egress rule to a dependency: ipBlocks from .cidrs, peers from .peers
(raw NetworkPolicyPeer objects), TCP .ports. With neither cidrs nor peers the rule
allows those ports to any destination: psync.validateTrust refuses that for
PostgreSQL and NATS; the OTLP collector keeps it. Call with the dependency's values.
*/}}
{{- define "psync.egressRule" -}}
- ports:
    {{- range .ports }}
    - protocol: TCP
      port: {{ . }}
    {{- end }}
  {{- if or .cidrs .peers }}
  to:
    {{- range .cidrs }}
    - ipBlock:
        cidr: {{ . }}
    {{- end }}
    {{- with .peers }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
{{- end -}}

{{/* Pod selector matching the Deployment pods of the given components of this release. Call with (dict "root" $ "components" (list "identity" "catalog")). */}}
{{- define "psync.componentsSelector" -}}
matchLabels:
  {{- include "psync.selectorLabels" (dict "root" .root) | nindent 2 }}
matchExpressions:
  - key: app.kubernetes.io/component
    operator: In
    values:
      {{- range .components }}
      - {{ . }}
      {{- end }}
{{- end -}}
