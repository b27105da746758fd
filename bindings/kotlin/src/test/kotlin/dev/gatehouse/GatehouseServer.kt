package dev.gatehouse

import java.io.File
import java.net.URI
import java.net.http.HttpClient
import java.net.http.HttpRequest
import java.net.http.HttpResponse
import java.nio.file.Files
import java.time.Duration
import java.util.concurrent.CompletableFuture
import java.util.concurrent.TimeUnit
import org.json.JSONArray
import org.json.JSONObject

/** The API key every test server accepts (actor `phone`). */
const val API_KEY = "kotlin-binding-secret"

/**
 * One `gatehouse serve` process on an ephemeral loopback port, with its own SQLite file.
 *
 * The binary is `$GATEHOUSE_BIN` (default `../../target/debug/gatehouse`, relative to this
 * Maven project). The base URL is read from the `listening on http://...` line the server
 * prints once bound. Also plays the runner/operator side over plain HTTP (invoking the
 * deterministic agent so it parks at a gate), which is not part of the mobile API.
 */
class GatehouseServer(noExecution: Boolean = false, agentaContract: String? = null) : AutoCloseable {
    private val dir = Files.createTempDirectory("gatehouse-kt-").toFile()
    private val log = File(dir, "server.log")
    private val process: Process
    val url: String
    private val http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build()

    init {
        val binary = System.getenv("GATEHOUSE_BIN") ?: File("../../target/debug/gatehouse").absolutePath
        check(File(binary).canExecute()) {
            "server binary $binary not found: build it (cargo build -p gatehouse-cli) or set GATEHOUSE_BIN"
        }
        val args = mutableListOf(
            binary, "serve",
            "--bind", "127.0.0.1:0",
            "--database-url", "sqlite://${File(dir, "gatehouse.db").absolutePath}",
            "--api-key", "phone=$API_KEY",
        )
        if (noExecution) args += "--no-execution"
        // `durable`: Agenta's paths speak the durable contract (the respond's continuation,
        // Stop, the snapshot, the durable events).
        if (agentaContract != null) args += listOf("--agenta-contract", agentaContract)
        process = ProcessBuilder(args)
            .redirectError(log)
            .redirectInput(ProcessBuilder.Redirect.from(File("/dev/null")))
            .start()
        val line = CompletableFuture<String?>()
        // Reads the listening line, then keeps draining stdout so the server never blocks
        // on a full pipe.
        Thread {
            process.inputStream.bufferedReader().useLines { lines ->
                for (text in lines) {
                    if (!line.isDone && text.startsWith("listening on ")) line.complete(text)
                }
            }
            line.complete(null)
        }.apply { isDaemon = true }.start()
        val found = try {
            line.get(30, TimeUnit.SECONDS)
        } catch (e: java.util.concurrent.TimeoutException) {
            null
        }
        if (found == null) {
            close()
            error("gatehouse serve printed no 'listening on' line; its log:\n${log.readText()}")
        }
        url = found.removePrefix("listening on ").trim()
    }

    /** POST a JSON body to `path?project_id=...` as the operator; the answer's JSON. */
    fun post(path: String, projectId: String, body: JSONObject): JSONObject {
        val request = HttpRequest.newBuilder(URI.create("$url$path?project_id=$projectId"))
            .timeout(Duration.ofSeconds(30))
            .header("Authorization", "Bearer $API_KEY")
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
            .build()
        val response = http.send(request, HttpResponse.BodyHandlers.ofString())
        check(response.statusCode() in 200..299) { "POST $path: HTTP ${response.statusCode()}: ${response.body()}" }
        return JSONObject(response.body())
    }

    /**
     * Invoke the deterministic agent with `ask` permissions: its Bash step parks the turn at
     * an approval gate. Returns the invoke answer (`session_id`, `interaction_ids`, ...).
     * [script] replaces the agent's default script (`agent.script`: `say`, `tool`,
     * `wait_ms`, ... steps); it must gate before it ends.
     */
    fun openGate(projectId: String, sessionId: String? = null, script: JSONArray? = null): JSONObject {
        val agent = JSONObject()
            .put("llm", JSONObject().put("model", "kt-model-1"))
            .put("runner", JSONObject().put("permissions", JSONObject().put("default", "ask")))
        if (script != null) agent.put("script", script)
        val parameters = JSONObject().put("agent", agent)
        val body = JSONObject().put("data", JSONObject()
            .put("inputs", JSONObject().put("messages", JSONArray().put(
                JSONObject().put("role", "user").put("content", "list files"))))
            .put("parameters", parameters))
        if (sessionId != null) body.put("session_id", sessionId)
        val answer = post("/api/invoke", projectId, body)
        check(answer.getString("status") == "parked") { "the agent did not park: $answer" }
        return answer
    }

    /**
     * TCP connections to or from this server's port in state ESTABLISHED, from
     * /proc/net/tcp (both ends of a loopback connection count: a live watch is 2).
     */
    fun establishedConnections(): Int {
        val port = ":%04X".format(URI.create(url).port)
        return File("/proc/net/tcp").readLines().drop(1).count { line ->
            val fields = line.trim().split(Regex("\\s+"))
            fields.size > 3 && fields[3] == "01" && (fields[1].endsWith(port) || fields[2].endsWith(port))
        }
    }

    override fun close() {
        if (process.isAlive) {
            process.destroy()
            if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly().waitFor()
        }
        dir.deleteRecursively()
    }
}
