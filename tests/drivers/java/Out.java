import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The driver's only channel to the Python test: one JSON object per line on stdout, and a line on stdin
 * whenever the test has finished checking the server side of a phase. kafka-clients ships no JSON library
 * the drivers could use, so this writes the few shapes they need (strings, numbers, booleans, lists, maps).
 */
final class Out {
    private static final BufferedReader STDIN =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    private Out() {}

    /** Builds an ordered map from alternating keys and values. */
    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    /** Prints `{"event": event, ...fields}` as one line; threads may call it concurrently. */
    static synchronized void emit(String event, Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("event", event);
        m.putAll(obj(kv));
        StringBuilder sb = new StringBuilder();
        write(sb, m);
        System.out.println(sb);
        System.out.flush();
    }

    /** Announces a phase and blocks until the test says to go on (or closes stdin, which ends the run). */
    static void phase(String name, Object... kv) throws IOException {
        Object[] all = new Object[kv.length + 2];
        all[0] = "phase";
        all[1] = name;
        System.arraycopy(kv, 0, all, 2, kv.length);
        emit("phase", all);
        if (STDIN.readLine() == null) {
            emit("error", "where", name, "error", "EOF", "message", "the test closed stdin");
            System.exit(3);
        }
    }

    /** Reports an exception as an event the test can assert on (class name and message). */
    static Map<String, Object> error(Throwable e) {
        Throwable cause = e;
        while ((cause instanceof java.util.concurrent.ExecutionException
                        || cause instanceof java.util.concurrent.CompletionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return obj("error", cause.getClass().getSimpleName(), "message", String.valueOf(cause.getMessage()));
    }

    private static void write(StringBuilder sb, Object v) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Map<?, ?> map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!first) sb.append(',');
                first = false;
                write(sb, String.valueOf(e.getKey()));
                sb.append(':');
                write(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof Collection<?> list) {
            sb.append('[');
            boolean first = true;
            for (Object o : list) {
                if (!first) sb.append(',');
                first = false;
                write(sb, o);
            }
            sb.append(']');
        } else {
            String s = v.toString();
            sb.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '"' || c == '\\') {
                    sb.append('\\').append(c);
                } else if (c < 0x20) {
                    sb.append(String.format("\\u%04x", (int) c));
                } else {
                    sb.append(c);
                }
            }
            sb.append('"');
        }
    }
}
