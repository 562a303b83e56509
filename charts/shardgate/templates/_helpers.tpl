{{/* The chart name, possibly overridden. */}}
{{- define "shardgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object name: the release name, plus the chart name unless it is in the release name already. */}}
{{- define "shardgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Selector labels: stable for the life of the release. */}}
{{- define "shardgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "shardgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{/* Labels on every object. */}}
{{- define "shardgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "shardgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: shardgate
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The controller's ServiceAccount: the chart's (serviceAccount.name, default the full name) when serviceAccount.create, else serviceAccount.name, which must then name an existing one. */}}
{{- define "shardgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "shardgate.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false: name the existing ServiceAccount the controller runs as" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The ServiceAccount whose token reads /debug/config_dump (shardgate config dump): fixed by default, as the CLI's help names it (kubectl create token -n <release namespace> shardgate-config-reader). */}}
{{- define "shardgate.configReaderName" -}}
{{- default "shardgate-config-reader" .Values.configReader.name -}}
{{- end -}}

{{/* The ServiceAccount (and its token Secret) the ServiceMonitor scrapes with. */}}
{{- define "shardgate.metricsReaderName" -}}
{{- printf "%s-metrics-reader" (include "shardgate.fullname" .) -}}
{{- end -}}

{{/* The xDS Service's name: fixed, because the Envoy bootstrap the controller writes dials shardgate-xds.<namespace>.svc (internal/infra). */}}
{{- define "shardgate.xdsServiceName" -}}
shardgate-xds
{{- end -}}

{{/* The xDS CA Secret the controller creates in its namespace (internal/manager XDSCASecret). */}}
{{- define "shardgate.xdsCASecretName" -}}
shardgate-xds-ca
{{- end -}}

{{/* The controller image: repository@digest when a digest is set (the tag is then ignored), else repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "shardgate.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}
