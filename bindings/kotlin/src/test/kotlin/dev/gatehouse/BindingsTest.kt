package dev.gatehouse

import java.time.Duration
import java.util.UUID
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import kotlinx.coroutines.runBlocking
import org.json.JSONObject
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.assertThrows

/** The Kotlin bindings against a live `gatehouse serve` (one server for the class). */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class BindingsTest {
    // Written for Agenta's contract before the durable one (a second device's other verdict
    // is AlreadyAnswered); the durable contract, the server's default, is DurableTest's.
    private val server = GatehouseServer(agentaContract = "legacy")

    @AfterAll
    fun stopServer() = server.close()

    private fun newProject(): String = UUID.randomUUID().toString()

    private fun clientFor(baseUrl: String, projectId: String, apiKey: String = API_KEY) =
        GatehouseClient(ClientConfig(baseUrl = baseUrl, apiKey = apiKey, projectId = projectId, timeout = Duration.ofSeconds(10)))

    private fun gateId(answer: JSONObject): String = answer.getJSONArray("interaction_ids").getString(0)

    @Test
    fun `list pending shows the gate with its request and stamped config`() = runBlocking {
        val project = newProject()
        val answer = server.openGate(project)
        clientFor(server.url, project).use { client ->
            val gates = client.listPendingInteractions(answer.getString("session_id"))
            assertEquals(listOf(gateId(answer)), gates.map { it.id })
            val gate = gates.single()
            assertEquals(InteractionKind.UserApproval, gate.kind)
            assertEquals(InteractionStatus.Pending, gate.status)
            assertEquals("Bash", gate.request?.tool)
            assertEquals("echo hi", JSONObject(gate.request?.args!!).getString("command"))
            val model = JSONObject(gate.parameters!!).getJSONObject("agent").getJSONObject("llm").getString("model")
            assertEquals("kt-model-1", model)
            assertEquals(gate, client.getInteraction(gate.id))
        }
    }

    @Test
    fun `respond, then a second respond throws AlreadyAnswered`() = runBlocking {
        val project = newProject()
        val id = gateId(server.openGate(project))
        clientFor(server.url, project).use { client ->
            val answered = client.respondToInteraction(id, true, "go ahead", null)
            assertEquals(id, answered.id)
            assertTrue(answered.status != InteractionStatus.Pending)

            val error = assertThrows<GatehouseException.AlreadyAnswered> {
                runBlocking { client.respondToInteraction(id, approved = false) } // defaults: no message

            }
            assertFalse(error.retryable)
            assertEquals(GatehouseErrorKind.ALREADY_ANSWERED, error.kind)
            assertTrue(error.msg.contains("respond_interaction"), error.msg)
            assertEquals(error.msg, error.toString()) // Display is exported
            assertEquals(error.msg, error.message) // not `msg=..., details=...`
            assertTrue(client.listPendingInteractions().isEmpty())
        }
    }

    @Test
    fun `approve all reports answered, already answered and failed targets`() = runBlocking {
        val project = newProject()
        val fresh = gateId(server.openGate(project))
        val settled = gateId(server.openGate(project))
        val unknown = UUID.randomUUID().toString()
        clientFor(server.url, project).use { client ->
            client.respondToInteraction(settled, false, "no", null)

            val report = client.approveAll(listOf(fresh, settled, unknown), true)
            assertEquals(listOf(fresh), report.answered.map { it.id })
            assertEquals(listOf(settled), report.alreadyAnswered)
            assertEquals(listOf(unknown), report.failed.map { it.interactionId })
            assertEquals(GatehouseErrorKind.NOT_FOUND, report.failed.single().kind)
            assertFalse(report.failed.single().retryable)
            assertFalse(report.allAlreadyAnswered)

            val again = client.approveAll(listOf(fresh, settled), true)
            assertTrue(again.answered.isEmpty() && again.failed.isEmpty())
            assertEquals(setOf(fresh, settled), again.alreadyAnswered.toSet())
            assertTrue(again.allAlreadyAnswered)
        }
    }

    private open class RecordingListener : WatchListener {
        val connected = CountDownLatch(1)
        val gateOpened = CountDownLatch(1)
        val gateAnswered = CountDownLatch(1)
        val events = CopyOnWriteArrayList<WatchEvent>()
        val closed = CopyOnWriteArrayList<GatehouseException?>()

        override fun onConnected() = connected.countDown()

        override fun onEvent(event: WatchEvent) {
            events += event
            if (event is WatchEvent.Interaction) {
                if (event.status == InteractionStatus.Pending) gateOpened.countDown() else gateAnswered.countDown()
            }
        }

        override fun onReconnecting(attempt: Int, error: GatehouseException) {}

        override fun onClosed(error: GatehouseException?) {
            closed += error
        }
    }

    @Test
    fun `a watch listener sees a gate open, and cancel stops it`() = runBlocking {
        val project = newProject()
        val session = UUID.randomUUID().toString()
        clientFor(server.url, project).use { client ->
            val listener = RecordingListener()
            val handle = client.watchSession(session, listener)
            val answer: JSONObject
            try {
                assertTrue(listener.connected.await(15, TimeUnit.SECONDS), "the watch never connected")
                answer = server.openGate(project, session)
                assertTrue(listener.gateOpened.await(15, TimeUnit.SECONDS), "no gate event: ${listener.events}")
                val opened = listener.events.filterIsInstance<WatchEvent.Interaction>().first()
                assertEquals(session, opened.sessionId)
            } finally {
                handle.cancel()
            }
            assertTrue(handle.isFinished())
            val seen = listener.events.size
            // A second, live watch proves the answer's events were sent; the cancelled one
            // hears none of them.
            val witness = RecordingListener()
            client.watchSession(session, witness).use {
                assertTrue(witness.connected.await(15, TimeUnit.SECONDS))
                client.respondToInteraction(gateId(answer), true, null, null)
                assertTrue(witness.gateAnswered.await(15, TimeUnit.SECONDS), "no answer event: ${witness.events}")
            }
            assertEquals(seen, listener.events.size, "a callback ran after cancel()")
            assertTrue(listener.closed.isEmpty())
            handle.close()
        }
    }

    /** Throws from onConnected: the watch must go on, and nothing crashes. */
    private class ThrowingListener : RecordingListener() {
        override fun onConnected() {
            super.onConnected()
            throw IllegalStateException("the app's listener is buggy")
        }
    }

    @Test
    fun `a listener that throws does not stop the watch`() = runBlocking {
        val project = newProject()
        val session = UUID.randomUUID().toString()
        clientFor(server.url, project).use { client ->
            val listener = ThrowingListener()
            client.watchSession(session, listener).use { handle ->
                assertTrue(listener.connected.await(15, TimeUnit.SECONDS), "the watch never connected")
                server.openGate(project, session)
                assertTrue(listener.gateOpened.await(15, TimeUnit.SECONDS), "no gate event after the throw")
                assertFalse(handle.isFinished())
            }
        }
    }

    @Test
    fun `an intervention goes from requested to applied`() = runBlocking {
        val project = newProject()
        val answer = server.openGate(project)
        val execution = answer.getJSONObject("execution")
        val room = execution.getString("room_id")
        val session = execution.getString("session_id")
        clientFor(server.url, project).use { client ->
            val seen = client.getExecutionSession(room, session)
            assertEquals(execution.getLong("revision"), seen.revision)
            assertEquals(ExecutionSessionStatus.Paused, seen.status)

            val requested = client.requestIntervention(room, session, seen.revision, "stop", Checkpoint.PreAction, null)
            assertEquals(InterventionState.Requested, requested.state)
            // Requested is not applied: the run is parked at the gate, a short wait times out.
            assertEquals(InterventionOutcome.TimedOut, client.waitForIntervention(room, session, requested.operationId, Duration.ofMillis(50)))
            assertThrows<GatehouseException.RevisionConflict> {
                runBlocking { client.requestIntervention(room, session, seen.revision, "be brief", Checkpoint.PreStep, null) }
            }

            client.respondToInteraction(gateId(answer), true, null, null)
            val outcome = client.waitForIntervention(room, session, requested.operationId, Duration.ofSeconds(10))
            assertTrue(outcome is InterventionOutcome.Applied, "not applied: $outcome")
            val evidence = (outcome as InterventionOutcome.Applied).evidence
            assertEquals(ExecutionEventType.InterventionApplied, evidence.eventType)
            assertEquals(requested.operationId, evidence.operationId)
            assertEquals(Checkpoint.PreAction, evidence.checkpoint)
            // The stop halts the run right after its evidence is written; the session is
            // reconciled a moment later.
            var done = client.getExecutionSession(room, session)
            var polls = 0
            while ((done.status == ExecutionSessionStatus.Active || done.status == ExecutionSessionStatus.Paused) && polls++ < 500) {
                kotlinx.coroutines.delay(20)
                done = client.getExecutionSession(room, session)
            }
            assertEquals(ExecutionSessionStatus.Canceled, done.status)
        }
    }

    @Test
    fun `an AgentPlat upstream client uses the root paths, the tenant and the participant`() = runBlocking {
        val project = newProject()
        val answer = server.openGate(project)
        val execution = answer.getJSONObject("execution")
        val room = execution.getString("room_id")
        val session = execution.getString("session_id")
        val config = ClientConfig(
            baseUrl = server.url,
            apiKey = API_KEY,
            timeout = Duration.ofSeconds(10),
            upstream = Upstream.AGENTPLAT,
            tenant = project,
            participantId = "human-1",
        )
        GatehouseClient(config).use { client ->
            val seen = client.getExecutionSession(room, session)
            assertEquals(project, seen.tenantId)
            val requested = client.requestIntervention(room, session, seen.revision, "be brief", Checkpoint.PreStep)
            assertEquals(InterventionState.Requested, requested.state)
            // A checkpoint this library does not know is sent as given; the host refuses it.
            val refused = assertThrows<GatehouseException.Validation> {
                runBlocking {
                    client.requestIntervention(room, session, requested.session.revision, "x", Checkpoint.Unknown("mid_air"))
                }
            }
            assertEquals(GatehouseErrorKind.VALIDATION, refused.kind)
            // Interactions are not served by an AgentPlat host: refused without a request.
            assertThrows<GatehouseException.CapabilityUnavailable> { runBlocking { client.listPendingInteractions(null) } }
        }
        GatehouseClient(config.copy(tenant = null)).use { client ->
            val missing = assertThrows<GatehouseException.TenantRejected> {
                runBlocking { client.getExecutionSession(room, session) }
            }
            assertFalse(missing.retryable)
        }
    }

    @Test
    fun `capabilities, and capability unavailable against a no-execution server`() = runBlocking {
        GatehouseServer(noExecution = true).use { bare ->
            clientFor(bare.url, newProject()).use { client ->
                val caps = client.capabilities()
                assertEquals("gatehouse", caps.service)
                assertTrue(Capability.Interactions in caps.capabilities)
                assertFalse(Capability.Execution in caps.capabilities)
                repeat(2) {
                    val error = assertThrows<GatehouseException.CapabilityUnavailable> {
                        runBlocking { client.getExecutionSession("room-1", "es-1") }
                    }
                    assertFalse(error.retryable)
                    assertEquals("execution", error.details)
                }
            }
        }
    }

    @Test
    fun `bad configuration, a wrong key and an unreachable host are typed errors`() = runBlocking {
        assertThrows<GatehouseException.Config> { GatehouseClient(ClientConfig(baseUrl = "not a url")) }
        assertThrows<GatehouseException.Config> { GatehouseClient(ClientConfig(baseUrl = "http://127.0.0.1:9", tenant = " ")) }
        val unauthorized = assertThrows<GatehouseException.Unauthorized> {
            runBlocking { clientFor(server.url, newProject(), apiKey = "wrong").use { it.listPendingInteractions(null) } }
        }
        assertFalse(unauthorized.retryable)
        val offline = GatehouseClient(ClientConfig(baseUrl = "http://127.0.0.1:9", projectId = newProject(), timeout = Duration.ofSeconds(2)))
        val error = assertThrows<GatehouseException> { runBlocking { offline.getInteraction(UUID.randomUUID().toString()) } }
        assertTrue(error.kind in setOf(GatehouseErrorKind.TRANSPORT, GatehouseErrorKind.TIMEOUT), error.toString())
        assertTrue(error.retryable, error.toString())
        offline.close()
    }

    @Test
    fun `an error's message is its sentence and its kind and retry flag are properties`() = runBlocking {
        clientFor(server.url, newProject()).use { client ->
            val error = assertThrows<GatehouseException.NotFound> {
                runBlocking { client.getInteraction(UUID.randomUUID().toString()) }
            }
            assertTrue(error.msg.contains("not found"), error.msg)
            assertTrue(error.details != null)
            // What an app logs or shows by default: the sentence, never `msg=..., details=...`.
            for (text in listOf(error.message, error.localizedMessage, error.toString(), "$error")) {
                assertEquals(error.msg, text)
            }
            assertEquals(GatehouseErrorKind.NOT_FOUND, error.kind)
            assertFalse(error.retryable)
        }
        val busy = GatehouseException.Server("list_interactions: server error, HTTP 503: busy", "busy", 503u)
        assertEquals("list_interactions: server error, HTTP 503: busy", busy.message)
        assertEquals(GatehouseErrorKind.SERVER, busy.kind)
        assertTrue(busy.retryable)
        assertFalse(GatehouseException.Server("teapot", null, 418u).retryable)
    }
}
