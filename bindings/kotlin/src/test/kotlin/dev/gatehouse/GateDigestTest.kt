package dev.gatehouse

import java.io.File
import java.time.Duration
import java.util.UUID
import kotlinx.coroutines.runBlocking
import org.json.JSONObject
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.assertThrows

/**
 * Answers bound to the gate that was shown (docs/CONTRACT.md C8): the shared vectors
 * (tests/data/gate_digest.vectors.json) through the binding's `gateDigest`, and, against
 * a live durable `gatehouse serve`, a respond from the displayed record: a record that is
 * not the gate as it is now gets `StaleGate` with nothing recorded; the genuine one is
 * answered.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GateDigestTest {
    private val server = GatehouseServer(agentaContract = "durable")

    @AfterAll
    fun stopServer() = server.close()

    /** The repository root: from the consumer project's tests folder, or bindings/kotlin. */
    private fun repositoryRoot(): File =
        System.getProperty("gatehouse.tests.dir")?.let { File(it, "../../../../..") } ?: File("../..")

    @Test
    fun `every shared vector is computed alike`() {
        val file = File(repositoryRoot(), "tests/data/gate_digest.vectors.json")
        val vectors = JSONObject(file.readText()).getJSONArray("vectors")
        assertTrue(vectors.length() >= 10)
        for (i in 0 until vectors.length()) {
            val vector = vectors.getJSONObject(i)
            fun text(key: String): String? = if (vector.isNull(key)) null else vector.getString(key)
            val digest = gateDigest(vector.getString("id"), vector.getLong("revision"), text("tool"), text("tool_call_id"), text("args_json"))
            assertEquals(vector.getString("digest"), digest, vector.getString("name"))
        }
    }

    @Test
    fun `a respond from the displayed record is bound to it`(): Unit = runBlocking {
        val project = UUID.randomUUID().toString()
        val client = GatehouseClient(ClientConfig(baseUrl = server.url, apiKey = API_KEY, projectId = project, timeout = Duration.ofSeconds(10)))
        val session = server.openGate(project).getString("session_id")
        val gate = client.listPendingInteractions(session).single()
        val request = gate.request!!
        assertEquals(1L, gate.revision)
        assertTrue(gate.digest!!.startsWith("sha256:"))
        assertEquals(gate.digest, gateDigest(gate.id, gate.revision!!, request.tool, request.toolCallId, request.args))

        assertThrows<GatehouseException.StaleGate> {
            runBlocking { client.respondToGate(gate.copy(revision = gate.revision!! + 1), true) }
        }
        val edited = gate.copy(request = request.copy(args = """{"command":"rm -rf /"}"""))
        assertThrows<GatehouseException.StaleGate> { runBlocking { client.respondToGate(edited, true) } }
        val still = client.getInteraction(gate.id)
        assertEquals(InteractionStatus.Pending, still.status)
        assertNull(still.resolution)

        val outcome = client.respondToGate(gate, true)
        assertTrue(outcome is RespondOutcome.Continued, "$outcome")
    }
}
