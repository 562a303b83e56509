/*
Copyright The shardgate Authors.
*/

package translate

import (
	"strings"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/shardgate/shardgate/internal/ir"
)

// accessLogPath is where the proxies write their access log: their
// standard output, which the container runtime collects.
const accessLogPath = "/dev/stdout"

// accessLog writes one line per request to the proxy's standard output:
// a JSON object of l.JSON's fields (Envoy leaves a field whose operator
// has no value as null, and types numbers as numbers), or l.Text.
func accessLog(l *ir.AccessLog) *accesslogv3.AccessLog {
	var format *corev3.SubstitutionFormatString
	if l.Text != "" {
		text := l.Text
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		format = &corev3.SubstitutionFormatString{Format: &corev3.SubstitutionFormatString_TextFormatSource{
			TextFormatSource: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: text}},
		}}
	} else {
		fields := make(map[string]*structpb.Value, len(l.JSON))
		for k, v := range l.JSON {
			fields[k] = structpb.NewStringValue(v)
		}
		format = &corev3.SubstitutionFormatString{Format: &corev3.SubstitutionFormatString_JsonFormat{
			JsonFormat: &structpb.Struct{Fields: fields},
		}}
	}
	return &accesslogv3.AccessLog{
		Name: accessLoggerFile,
		ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: mustAny(&filev3.FileAccessLog{
			Path:            accessLogPath,
			AccessLogFormat: &filev3.FileAccessLog_LogFormat{LogFormat: format},
		})},
	}
}
