package dev.gatehouse

import java.time.Duration
import java.util.UUID
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.takeWhile
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.json.JSONArray
import org.json.JSONObject
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.assertInstanceOf
import org.junit.jupiter.api.assertThrows

/**
 * Agenta's durable session control through the Kotlin bindings, against a live
 * `gatehouse serve --agenta-contract durable` (one server for the class; a `legacy` one for
 * a host without the durable contract): the respond's outcomes and conflicts, approve-all
 * grouped by turn, Stop (requested, then stopped), the snapshot and the events flow.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DurableTest {
    private val server = GatehouseServer(agentaContract = "durable")
    private val legacy = GatehouseServer(agentaContract = "legacy")

    @AfterAll
    fun stopServers() {
        server.close()
        legacy.close()
    }

    private fun newProject(): String = UUID.randomUUID().toString()

    private fun clientFor(srv: GatehouseServer, projectId: String) =
        GatehouseClient(ClientConfig(baseUrl = srv.url, apiKey = API_KEY, projectId = projectId, timeout = Duration.ofSeconds(10)))

    /** Opens a gate in a fresh session; its row as the phone lists it. */
    private suspend fun openGate(srv: GatehouseServer, client: GatehouseClient, projectId: String): Interaction {
        val sessionId = srv.openGate(projectId).getString("session_id")
        val gate = client.listPendingInteractions(sessionId).single()
        assertTrue(gate.turnId != null, "a gate of the harness names its turn")
        return gate
    }

    @Test
    fun `the client learns the contract from the capabilities`(): Unit = runBlocking {
        clientFor(server, newProject()).use { client ->
            assertNull(client.agentaContract())
            client.capabilities()
            assertEquals(AgentaContract.DURABLE, client.agentaContract())
        }
        clientFor(legacy, newProject()).use { client ->
            client.capabilities()
            assertEquals(AgentaContract.LEGACY, client.agentaContract())
        }
    }

    @Test
    fun `respond is continued, then already recorded, then a different verdict is not continuable`(): Unit = runBlocking {
        val project = newProject()
        clientFor(server, project).use { client ->
            val gate = openGate(server, client, project)
            val continued = assertInstanceOf<RespondOutcome.Continued>(
                client.respondWithOutcome(gate.id, true, expectedExecutionId = gate.turnId, sessionId = gate.sessionId),
            )
            assertEquals(gate.id, continued.interaction.id)
            assertTrue(continued.commandId.isNotEmpty())
            assertEquals("pending", continued.commandState)
            assertNotEquals(gate.turnId, continued.executionId) // the continuation is a new execution
            assertEquals("pending_delivery", continued.executionState)

            val again = assertInstanceOf<RespondOutcome.AlreadyRecorded>(
                client.respondWithOutcome(gate.id, true, sessionId = gate.sessionId),
            )
            assertEquals(gate.turnId, again.executionId)
            assertEquals("terminal", again.executionState)

            val error = assertThrows<GatehouseException.TurnNotContinuable> {
                runBlocking { client.respondWithOutcome(gate.id, false, sessionId = gate.sessionId) }
            }
            assertEquals(GatehouseErrorKind.TURN_NOT_CONTINUABLE, error.kind)
            assertFalse(error.retryable)
        }
    }

    @Test
    fun `another verdict after the batch continued the turn throws TurnNotContinuable`(): Unit = runBlocking {
        val project = newProject()
        clientFor(server, project).use { client ->
            val gate = openGate(server, client, project)
            // Gatehouse's own batch answers it durably on a durable host: the turn continues.
            assertEquals(listOf(gate.id), client.approveAll(listOf(gate.id), false).answered.map { it.id })
            val error = assertThrows<GatehouseException.TurnNotContinuable> {
                runBlocking { client.respondWithOutcome(gate.id, true, sessionId = gate.sessionId) }
            }
            assertEquals(GatehouseErrorKind.TURN_NOT_CONTINUABLE, error.kind)
        }
    }

    @Test
    fun `a stale expected execution throws StaleExecution naming the current one`(): Unit = runBlocking {
        val project = newProject()
        clientFor(server, project).use { client ->
            val gate = openGate(server, client, project)
            val error = assertThrows<GatehouseException.StaleExecution> {
                runBlocking {
                    client.respondWithOutcome(gate.id, true, expectedExecutionId = UUID.randomUUID().toString(), sessionId = gate.sessionId)
                }
            }
            assertEquals(GatehouseErrorKind.STALE_EXECUTION, error.kind)
            assertTrue("${error.msg} ${error.details}".contains(gate.turnId!!), error.toString())
            // Nothing was written: the gate waits, and its current turn takes the answer.
            assertEquals(listOf(gate.id), client.listPendingInteractions(gate.sessionId).map { it.id })
            assertInstanceOf<RespondOutcome.Continued>(
                client.respondWithOutcome(gate.id, true, expectedExecutionId = gate.turnId, sessionId = gate.sessionId),
            )
        }
    }

    @Test
    fun `approve gates answers each turn once and reports every gate`(): Unit = runBlocking {
        val project = newProject()
        clientFor(server, project).use { client ->
            val fresh = listOf(openGate(server, client, project), openGate(server, client, project))
            val settled = openGate(server, client, project)
            val denied = openGate(server, client, project)
            assertInstanceOf<RespondOutcome.Continued>(client.respondWithOutcome(settled.id, true, sessionId = settled.sessionId))
            assertInstanceOf<RespondOutcome.Continued>(client.respondWithOutcome(denied.id, false, sessionId = denied.sessionId))

            val report = client.approveGates(fresh + settled + denied + fresh[0], true)
            assertEquals(4, report.gates.size) // the gate listed twice is answered once
            val byId = report.gates.associateBy { it.interactionId }
            val commands = fresh.map { gate ->
                val line = byId.getValue(gate.id)
                assertEquals(gate.turnId, line.turnId)
                val answered = assertInstanceOf<GateResult.Answered>(line.result)
                val outcome = assertInstanceOf<RespondOutcome.Continued>(answered.outcome)
                assertNotEquals(gate.turnId, outcome.executionId)
                outcome.commandId
            }
            assertEquals(2, commands.toSet().size) // one continuation per turn
            val recorded = assertInstanceOf<GateResult.Answered>(byId.getValue(settled.id).result)
            assertInstanceOf<RespondOutcome.AlreadyRecorded>(recorded.outcome)
            val failed = assertInstanceOf<GateResult.Failed>(byId.getValue(denied.id).result)
            assertEquals(GatehouseErrorKind.TURN_NOT_CONTINUABLE, failed.failure.kind)
            assertFalse(failed.failure.retryable)
            assertFalse(report.allAlreadyAnswered)
            assertTrue(client.listPendingInteractions().isEmpty())
        }
    }

    @Test
    fun `approve gates on a legacy host answers each gate`(): Unit = runBlocking {
        val project = newProject()
        clientFor(legacy, project).use { client ->
            val gates = listOf(openGate(legacy, client, project), openGate(legacy, client, project))
            val report = client.approveGates(gates, true)
            assertEquals(gates.map { it.id }, report.gates.map { it.interactionId })
            for (line in report.gates) {
                val answered = assertInstanceOf<GateResult.Answered>(line.result)
                val outcome = assertInstanceOf<RespondOutcome.Answered>(answered.outcome)
                assertEquals(line.interactionId, outcome.interaction.id)
            }
            val again = client.approveGates(gates, true)
            assertTrue(again.gates.all { (it.result as? GateResult.Failed)?.failure?.kind == GatehouseErrorKind.ALREADY_ANSWERED })
            assertTrue(again.allAlreadyAnswered)
        }
    }

    // --- Stop, the snapshot and the durable events (the server's session routes) ---

    /** A turn that gates first, then works 20 s once answered: Stop catches it in flight. */
    private val slowAfterGate = JSONArray()
        .put(JSONObject().put("tool", "Bash").put("args", JSONObject().put("command", "echo hi")))
        .put(JSONObject().put("wait_ms", 20_000))
        .put(JSONObject().put("say", "done"))

    /** The session's snapshot once its turn runs (polled, at most 20 s). */
    private suspend fun waitUntilRunning(client: GatehouseClient, sessionId: String): SessionSnapshot {
        repeat(400) {
            val snapshot = client.sessionSnapshot(sessionId)
            if (snapshot.executionState == "running") return snapshot
            delay(50)
        }
        error("the turn of $sessionId never ran: ${client.sessionSnapshot(sessionId)}")
    }

    @Test
    fun `the snapshot lists the pending gates`(): Unit = runBlocking {
        val project = newProject()
        clientFor(server, project).use { client ->
            val gate = openGate(server, client, project)
            val snapshot = client.sessionSnapshot(gate.sessionId)
            assertEquals(listOf(gate), snapshot.pendingInteractions)
            assertTrue(snapshot.durableApprovals)
            assertEquals("idle", snapshot.executionState) // a turn parked on a gate is not running
            client.respondWithOutcome(gate.id, true, sessionId = gate.sessionId)
            assertTrue(client.sessionSnapshot(gate.sessionId).pendingInteractions.isEmpty())
        }
    }

    @Test
    fun `stop is requested, then waitForStop reports stopped`(): Unit = runBlocking {
        val project = newProject()
        clientFor(server, project).use { client ->
            val sessionId = server.openGate(project, script = slowAfterGate).getString("session_id")
            val gate = client.listPendingInteractions(sessionId).single()
            val continued = assertInstanceOf<RespondOutcome.Continued>(client.respondWithOutcome(gate.id, true, sessionId = sessionId))
            val running = waitUntilRunning(client, sessionId)
            assertEquals(continued.executionId, running.executionId)

            val stop = client.stopSession(sessionId, expectedExecutionId = running.executionId)
            // Requested is not applied: the command is recorded, the turn is stopping.
            assertTrue(stop.isStopping)
            assertEquals("pending", stop.commandState)
            assertEquals(running.executionId, stop.executionId)
            assertEquals("stopping", stop.executionState)

            val outcome = client.waitForStop(sessionId, stop, Duration.ofSeconds(30))
            assertEquals(StopOutcome.Stopped(running.executionId!!), outcome)
            assertEquals("idle", client.sessionSnapshot(sessionId).executionState)
        }
    }

    @Test
    fun `stop with a stale expected execution throws StaleExecution`(): Unit = runBlocking {
        val project = newProject()
        clientFor(server, project).use { client ->
            val sessionId = server.openGate(project, script = slowAfterGate).getString("session_id")
            val gate = client.listPendingInteractions(sessionId).single()
            client.respondWithOutcome(gate.id, true, sessionId = sessionId)
            val running = waitUntilRunning(client, sessionId)
            assertThrows<GatehouseException.StaleExecution> {
                runBlocking { client.stopSession(sessionId, expectedExecutionId = gate.turnId) }
            }
            val stop = client.stopSession(sessionId, expectedExecutionId = running.executionId)
            assertInstanceOf<StopOutcome.Stopped>(client.waitForStop(sessionId, stop, Duration.ofSeconds(30)))
        }
    }

    @Test
    fun `the events flow replays from after and ends when cancelled`(): Unit = runBlocking {
        val project = newProject()
        clientFor(server, project).use { client ->
            val gate = openGate(server, client, project)
            val continued = assertInstanceOf<RespondOutcome.Continued>(
                client.respondWithOutcome(gate.id, true, sessionId = gate.sessionId),
            )
            // The continuation's last event: its turn completed, nothing comes after it.
            val isTheEnd = { event: SessionEvent ->
                event.executionId == continued.executionId && event.eventType == "message.completed"
            }

            suspend fun collect(after: Long, until: (SessionEvent) -> Boolean): List<SessionEvent> = withTimeout(30_000) {
                val seen = mutableListOf<SessionEvent>()
                client.sessionEvents(gate.sessionId, after).takeWhile { event ->
                    seen += event
                    !until(event)
                }.toList()
                seen
            }
            // From the start: the parked turn's events, then the continuation's, in order.
            val everything = collect(0, isTheEnd)
            val sequences = everything.map { it.sequence!! }
            assertTrue(everything.size >= 2, everything.toString())
            assertEquals(sequences.sorted().distinct(), sequences)
            assertEquals(gate.turnId, everything.first().executionId)
            val last = sequences.last()
            assertEquals(last, client.sessionSnapshot(gate.sessionId).latestSequence)
            // From a sequence: exactly the events after it, the same ones.
            assertEquals(everything.drop(1), collect(sequences.first()) { it.sequence == last })

            // Cancelling the collector while it waits for an event that does not come (the
            // turn is over) ends it at once.
            val collector = launch(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) {
                client.sessionEvents(gate.sessionId, last).collect { error("no event was due: $it") }
            }
            delay(500)
            assertTrue(collector.isActive)
            withTimeout(5_000) { collector.cancelAndJoin() }
            assertTrue(collector.isCancelled)
        }
    }

    @Test
    fun `cancelling the events collector closes the stream's connection`(): Unit = runBlocking {
        // Its own server, and a client that only streams: the connections counted are the
        // stream's alone. A session with no events yet: the stream waits after its replay.
        GatehouseServer(agentaContract = "durable").use { own ->
            GatehouseClient(ClientConfig(baseUrl = own.url, apiKey = API_KEY, projectId = newProject())).use { client ->
                val collector = launch(Dispatchers.Default) {
                    client.sessionEvents(UUID.randomUUID().toString()).collect { error("no event was due: $it") }
                }
                var polls = 0
                while (own.establishedConnections() < 2 && polls++ < 100) delay(100)
                assertTrue(own.establishedConnections() >= 2, "the stream's connection") // both ends
                withTimeout(2_000) { collector.cancelAndJoin() }
                assertTrue(collector.isCancelled)
                var left = own.establishedConnections()
                polls = 0
                while (left != 0 && polls++ < 100) {
                    delay(100)
                    left = own.establishedConnections()
                }
                assertEquals(0, left, "connections left to the server after the cancel")
            }
        }
    }
}
