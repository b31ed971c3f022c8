{{/*
The internal trust boundary (README.md, "Credentials and TLS"): who calls whom,
each role's credential and the hashes the servers accept, internal TLS, and the
per-service database roles.

One table, psync.callees, says which services each component calls over the
network. The NetworkPolicies (egress to callees, ingress from callers), the service
URLs a pod is given and each server's INTERNAL_CALLERS are all derived from it, and
test/helm/chart.test.ts pins it to services/kit/rpc/access-policy.ts.
*/}}

{{/* Services each component calls over the network (a service calls itself in process). YAML: component → list. */}}
{{- define "psync.callees" -}}
gateway: [identity, catalog, calendar, notifications]
identity: []
catalog: [identity]
calendar: [catalog, identity]
notifications: [identity, catalog, calendar]
{{- end -}}

{{/* Services marketplace clients call (and that accept internalAuth.marketplace hashes). */}}
{{- define "psync.marketplaceServices" -}}
catalog calendar
{{- end -}}

{{/* Roles with a credential of their own in the chart: the five components and the operator. */}}
{{- define "psync.credentialRoles" -}}
gateway identity catalog calendar notifications operator
{{- end -}}

{{/*
Components that connect to NATS: catalog and calendar publish their events through
their outboxes (catalog.listing.*, psync.calendar.v1.*), notifications consumes
calendar's booking events. Identity and the gateway use no bus: they get no NATS_URL,
no NATS egress and no NATS credentials (identity then runs the in-process bus, which
nothing uses).
*/}}
{{- define "psync.natsRoles" -}}
catalog calendar notifications
{{- end -}}

{{/* The callees of a component as a space-separated list. Call with (dict "root" $ "component" "calendar"). */}}
{{- define "psync.calleesOf" -}}
{{- $all := include "psync.callees" .root | fromYaml -}}
{{- join " " (get $all .component) -}}
{{- end -}}

{{/* The components that call a service, in component order, space-separated. Call with (dict "root" $ "component" "identity"). */}}
{{- define "psync.callersOf" -}}
{{- $all := include "psync.callees" .root | fromYaml -}}
{{- $out := list -}}
{{- range (include "psync.components" .root | splitList " ") -}}
{{- if has $.component (get $all .) -}}
{{- $out = append $out . -}}
{{- end -}}
{{- end -}}
{{- join " " $out -}}
{{- end -}}

{{/* Name of the Secret holding a role's token. Call with (dict "root" $ "role" "gateway"). */}}
{{- define "psync.tokenSecretName" -}}
{{- $c := index .root.Values.internalAuth .role -}}
{{- if $c.existingSecret -}}
{{- $c.existingSecret -}}
{{- else if eq .role "operator" -}}
{{- printf "%s-operator-token" (include "psync.fullname" .root) | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s-internal-token" (include "psync.fullname" .root) .role | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Key of a role's token in its Secret. Call like psync.tokenSecretName. */}}
{{- define "psync.tokenSecretKey" -}}
{{- $c := index .root.Values.internalAuth .role -}}
{{- if $c.existingSecret }}{{ $c.existingSecretKey }}{{ else }}token{{ end -}}
{{- end -}}

{{/*
A generated token (only when the role has no existingSecret): the one already in the
release's Secret when `lookup` finds it (install/upgrade), else a new random one
("psop_" for the operator, as services/kit/base/operator-token.ts generates, "psin_"
otherwise; 43 alphanumerics ≈ 256 bits). Memoised in .Values for the render, so the
Secret and every hash of it agree across template files.
*/}}
{{- define "psync.generatedToken" -}}
{{- $memo := default (dict) (index .root.Values "__psyncGeneratedTokens") -}}
{{- if not (hasKey $memo .role) -}}
{{- $name := include "psync.tokenSecretName" . -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace $name -}}
{{- $token := "" -}}
{{- if and $existing $existing.data (hasKey $existing.data "token") -}}
{{- $token = index $existing.data "token" | b64dec -}}
{{- else -}}
{{- $token = printf "%s%s" (ternary "psop_" "psin_" (eq .role "operator")) (randAlphaNum 43) -}}
{{- end -}}
{{- $_ := set $memo .role $token -}}
{{- $_ := set .root.Values "__psyncGeneratedTokens" $memo -}}
{{- end -}}
{{- get $memo .role -}}
{{- end -}}

{{/* Lower-case hex SHA-256 of a role's current token. Call like psync.tokenSecretName. */}}
{{- define "psync.tokenSha256" -}}
{{- $c := index .root.Values.internalAuth .role -}}
{{- if $c.existingSecret -}}
{{- required (printf "internalAuth.%s.tokenSha256 is required with internalAuth.%s.existingSecret: the lower-case hex SHA-256 of the token (printf %%s \"$TOKEN\" | sha256sum)" .role .role) $c.tokenSha256 -}}
{{- else -}}
{{- include "psync.generatedToken" . | sha256sum -}}
{{- end -}}
{{- end -}}

{{/* Every hash accepted for a role: current first, then additionalTokenSha256, without repeats. Space-separated. */}}
{{- define "psync.acceptedHashes" -}}
{{- $c := index .root.Values.internalAuth .role -}}
{{- $hashes := prepend (concat $c.additionalTokenSha256 (list)) (include "psync.tokenSha256" .) -}}
{{- join " " (uniq $hashes) -}}
{{- end -}}

{{/*
INTERNAL_CALLERS of a service: role:sha256 entries of the release components that
call it (psync.callees), the operator, and on marketplace-facing services the
static marketplace hashes. Call with (dict "root" $ "component" "catalog").
*/}}
{{- define "psync.internalCallers" -}}
{{- $root := .root -}}
{{- $entries := list -}}
{{- $roles := append (include "psync.callersOf" . | splitList " " | compact) "operator" -}}
{{- range $roles -}}
{{- $role := . -}}
{{- range (include "psync.acceptedHashes" (dict "root" $root "role" $role) | splitList " ") -}}
{{- $entries = append $entries (printf "%s:%s" $role .) -}}
{{- end -}}
{{- end -}}
{{- if has .component (include "psync.marketplaceServices" $root | splitList " ") -}}
{{- range $root.Values.internalAuth.marketplace.acceptedTokenSha256 -}}
{{- $entries = append $entries (printf "marketplace:%s" .) -}}
{{- end -}}
{{- end -}}
{{- join "," $entries -}}
{{- end -}}

{{/* Base URL of a service's internal port: https:// with internal TLS, else http://. Call with (dict "root" $ "component" "identity"). */}}
{{- define "psync.internalUrl" -}}
{{- printf "%s://%s.%s.svc:%d" (ternary "https" "http" .root.Values.internalTls.enabled) (include "psync.componentName" .) .root.Release.Namespace (int .root.Values.ports.internal) -}}
{{- end -}}

{{/*
Internal TLS: one credential per workload (README.md, "Internal TLS"). Each component
has its own certificate and key in a Secret of its own, with only its own names and
only the usages it needs (psync.internalTlsUsages); every Secret carries the same CA
(ca.crt). Call the helpers below with (dict "root" $ "component" "identity").
*/}}

{{/*
Name of the Secret holding a component's certificate, key and CA:
internalTls.<component>.existingSecret, else the shared internalTls.existingSecret
(one certificate for every pod, the chart's earlier layout), else the Secret its
cert-manager Certificate writes, "<fullname>-<component>-internal-tls".
*/}}
{{- define "psync.internalTlsSecretName" -}}
{{- $t := .root.Values.internalTls -}}
{{- $own := (index $t .component).existingSecret -}}
{{- if $own -}}
{{- $own -}}
{{- else if $t.existingSecret -}}
{{- $t.existingSecret -}}
{{- else -}}
{{- printf "%s-%s-internal-tls" (include "psync.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* True (non-empty) when the chart renders a component's cert-manager Certificate (no existing Secret for it). */}}
{{- define "psync.internalTlsCertManager" -}}
{{- $t := .root.Values.internalTls -}}
{{- if and $t.enabled $t.certManager.enabled (not $t.existingSecret) (not (index $t .component).existingSecret) -}}true{{- end -}}
{{- end -}}

{{/* True (non-empty) when the chart renders its own self-signed CA: some component's Certificate is rendered and no issuerRef is given. Call with the root context. */}}
{{- define "psync.internalTlsOwnCa" -}}
{{- $root := . -}}
{{- if not .Values.internalTls.certManager.issuerRef -}}
{{- range (include "psync.components" . | splitList " ") -}}
{{- if include "psync.internalTlsCertManager" (dict "root" $root "component" .) -}}true{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Name of the chart's own CA objects (Issuers, CA Certificate and its Secret). Call with (dict "root" $ "suffix" "ca"). */}}
{{- define "psync.internalCaName" -}}
{{- printf "%s-internal-%s" (include "psync.fullname" .root) .suffix | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The DNS names of a component's certificate: its own Service's short, namespaced,
.svc and fully-qualified names, then (services only, which serve the internal port)
localhost and internalTls.extraDnsNames, then internalTls.<component>.extraDnsNames.
localhost names only the pod itself (`kubectl exec … psync`, a port-forward): no
network peer is reachable under it.
*/}}
{{- define "psync.internalDnsNames" -}}
{{- $root := .root -}}
{{- $t := $root.Values.internalTls -}}
{{- $ns := $root.Release.Namespace -}}
{{- $svc := include "psync.componentName" . -}}
{{- $names := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns $t.clusterDomain) -}}
{{- if include "psync.internalTlsServes" . -}}
{{- $names = concat $names (list "localhost") $t.extraDnsNames -}}
{{- end -}}
{{- $names = concat $names (index $t .component).extraDnsNames -}}
{{- toYaml (uniq $names) -}}
{{- end -}}

{{/* True (non-empty) when a component serves the internal API (a server certificate): every service, not the gateway. */}}
{{- define "psync.internalTlsServes" -}}
{{- if has .component (include "psync.services" .root | splitList " ") -}}true{{- end -}}
{{- end -}}

{{/* True (non-empty) when a component calls other services over the network (a client certificate): psync.callees. */}}
{{- define "psync.internalTlsCalls" -}}
{{- if include "psync.calleesOf" . -}}true{{- end -}}
{{- end -}}

{{/*
Extended key usages of a component's certificate: "server auth" for the services
(they serve the internal port), "client auth" for the components that call another
service over the network (gateway, catalog, calendar, notifications; not identity).
"client auth" does not depend on internalTls.requireClientCert: switching mutual TLS
on must not wait for cert-manager to re-issue every certificate while the pods roll
(they read the files at start-up), and a client certificate naming only its own
component grants nothing the role's bearer token does not.
*/}}
{{- define "psync.internalTlsUsages" -}}
{{- $u := list "digital signature" -}}
{{- if eq .root.Values.internalTls.certManager.privateKey.algorithm "RSA" -}}
{{- $u = append $u "key encipherment" -}}
{{- end -}}
{{- if include "psync.internalTlsServes" . -}}
{{- $u = append $u "server auth" -}}
{{- end -}}
{{- if include "psync.internalTlsCalls" . -}}
{{- $u = append $u "client auth" -}}
{{- end -}}
{{- toYaml $u -}}
{{- end -}}

{{/*
A probe action asking grpc.health.v1 about `service` with the kubelet's gRPC probe.
The kubelet's gRPC probe speaks only cleartext: with internal TLS on, the probe goes
to the health-only h2c port (HEALTH_PORT, ports.health), which serves nothing but
grpc.health.v1.Health; without TLS, to the internal port itself.
Call with (dict "root" $ "service" "psync.identity.v1.IdentityService").
*/}}
{{- define "psync.healthProbe" -}}
grpc:
  port: {{ ternary .root.Values.ports.health .root.Values.ports.internal .root.Values.internalTls.enabled }}
  service: {{ .service }}
{{- end -}}

{{/* Secret and key of a service's own database URL (database.perServiceRoles.<service>). Call with (dict "root" $ "component" "identity"). */}}
{{- define "psync.serviceDatabaseRef" -}}
{{- $ref := index .root.Values.database.perServiceRoles .component -}}
{{- $name := default (printf "%s-%s-database" (include "psync.fullname" .root) .component | trunc 63 | trimSuffix "-") $ref.existingSecret -}}
{{- toYaml (dict "existingSecret" $name "existingSecretKey" $ref.existingSecretKey) -}}
{{- end -}}

{{/*
Checks that values cannot express in the schema; rendered by configmap.yaml, so a
bad combination fails every render: each role's token in a Secret of its own (no
Secret lets one pod present another's credential), each service's database URL in
a Secret of its own, each component's certificate in a Secret of its own and a
certificate source for each when internal TLS is on, each role's NATS credentials
in Secrets of their own, NATS credentials for every role that uses NATS
(psync.validateNatsAuth), and a destination for PostgreSQL and NATS egress.
*/}}
{{- define "psync.validateTrust" -}}
{{- $root := . -}}
{{- $seen := dict -}}
{{- range (include "psync.credentialRoles" . | splitList " ") -}}
{{- $name := include "psync.tokenSecretName" (dict "root" $root "role" .) -}}
{{- if hasKey $seen $name -}}
{{- fail (printf "internalAuth.%s and internalAuth.%s use the same Secret %q: each role's token must live in a Secret of its own" (get $seen $name) . $name) -}}
{{- end -}}
{{- $_ := set $seen $name . -}}
{{- end -}}
{{- if .Values.database.perServiceRoles.enabled -}}
{{- $admin := default (include "psync.defaultSecretName" .) .Values.database.existingSecret -}}
{{- $dbSeen := dict $admin "database (DATABASE_URL)" -}}
{{- range (include "psync.services" . | splitList " ") -}}
{{- $name := (include "psync.serviceDatabaseRef" (dict "root" $root "component" .) | fromYaml).existingSecret -}}
{{- if hasKey $dbSeen $name -}}
{{- fail (printf "database.perServiceRoles.%s shares the Secret %q with %s: each service's database URL must live in a Secret of its own" . $name (get $dbSeen $name)) -}}
{{- end -}}
{{- $_ := set $dbSeen $name (printf "database.perServiceRoles.%s" .) -}}
{{- end -}}
{{- end -}}
{{- if .Values.internalTls.enabled -}}
{{- $tlsSeen := dict -}}
{{- range (include "psync.components" . | splitList " ") -}}
{{- $own := (index $root.Values.internalTls .).existingSecret -}}
{{- if and (not $own) (not $root.Values.internalTls.existingSecret) (not $root.Values.internalTls.certManager.enabled) -}}
{{- fail (printf "internalTls.enabled needs a certificate for %s: set internalTls.%s.existingSecret (a kubernetes.io/tls Secret with ca.crt), or internalTls.certManager.enabled=true; or set internalTls.enabled=false (e.g. a service mesh's mutual TLS)" . .) -}}
{{- end -}}
{{- $name := include "psync.internalTlsSecretName" (dict "root" $root "component" .) -}}
{{- if ne $name $root.Values.internalTls.existingSecret -}}
{{- if hasKey $tlsSeen $name -}}
{{- fail (printf "internalTls.%s and internalTls.%s use the same Secret %q: each component's certificate and key must live in a Secret of its own" (get $tlsSeen $name) . $name) -}}
{{- end -}}
{{- $_ := set $tlsSeen $name . -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $natsSeen := dict -}}
{{- range (include "psync.natsRoles" . | splitList " ") -}}
{{- $role := . -}}
{{- $c := index $root.Values.nats.credentials $role -}}
{{- range (list $c.existingSecret $c.urlExistingSecret | compact | uniq) -}}
{{- if hasKey $natsSeen . -}}
{{- fail (printf "nats.credentials.%s and nats.credentials.%s use the same Secret %q: each role's NATS credentials must live in a Secret of its own" (get $natsSeen .) $role .) -}}
{{- end -}}
{{- $_ := set $natsSeen . $role -}}
{{- end -}}
{{- end -}}
{{- include "psync.validateNatsAuth" . -}}
{{- if .Values.networkPolicy.enabled -}}
{{- range (list "postgres" "nats") -}}
{{- $dep := index $root.Values.networkPolicy . -}}
{{- if not (or $dep.cidrs $dep.peers) -}}
{{- fail (printf "networkPolicy.%s needs cidrs or peers (where the servers are); cidrs: [0.0.0.0/0] allows any destination" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and .Values.internalTls.requireClientCert (not .Values.internalTls.enabled) -}}
{{- fail "internalTls.requireClientCert needs internalTls.enabled" -}}
{{- end -}}
{{- end -}}

{{/*
No anonymous bus in production: each role that uses NATS signs in, with its own
Secret (nats.credentials.<role>.existingSecret or urlExistingSecret) or the shared
nats.existingSecret (a NATS_URL with user:password). Otherwise anyone who reaches the
server could publish the events that become signed webhooks. Only
nats.allowAnonymous: true renders without (a development cluster).
*/}}
{{- define "psync.validateNatsAuth" -}}
{{- $root := . -}}
{{- if not .Values.nats.allowAnonymous -}}
{{- $missing := list -}}
{{- range (include "psync.natsRoles" . | splitList " ") -}}
{{- $c := index $root.Values.nats.credentials . -}}
{{- if not (or $c.existingSecret $c.urlExistingSecret $root.Values.nats.existingSecret) -}}
{{- $missing = append $missing . -}}
{{- end -}}
{{- end -}}
{{- if $missing -}}
{{- fail (printf "NATS credentials are required: %s would connect to %s anonymously. Set nats.credentials.<role>.existingSecret (a .creds file) or .urlExistingSecret (NATS_URL with user:password) for each, or nats.existingSecret (one NATS_URL with credentials for all); or set nats.allowAnonymous=true to run without (development only; README.md \"NATS credentials per role\")" (join ", " $missing) $root.Values.nats.url) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The generated Secret holding a role's token, unless the role has an existingSecret.
Call with (dict "root" $ "role" "gateway"); labelled with the role as component.
*/}}
{{- define "psync.tokenSecret" -}}
{{- $c := index .root.Values.internalAuth .role -}}
{{- if not $c.existingSecret -}}
apiVersion: v1
kind: Secret
metadata:
  name: {{ include "psync.tokenSecretName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "psync.labels" (dict "root" .root "component" .role) | nindent 4 }}
  annotations:
    # Not secret: what INTERNAL_CALLERS holds for this token.
    psync.partner-sync.example/token-sha256: {{ include "psync.tokenSha256" . }}
type: Opaque
data:
  token: {{ include "psync.generatedToken" . | b64enc }}
{{- end -}}
{{- end -}}
