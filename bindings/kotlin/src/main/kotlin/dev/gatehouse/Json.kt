// Hand-written (not generated): the JSON fields of a gate, which cross the FFI as text
// (uniffi has no JSON type), parsed as org.json's JSONObject (built into Android; a JVM
// app gets it as this artifact's dependency).

package dev.gatehouse

import org.json.JSONObject

/** [Interaction.parameters] parsed: the stamped config the gated turn runs under. */
val Interaction.parametersJson: JSONObject? get() = parameters?.let(::JSONObject)

/** [Interaction.resolution] parsed: the recorded answer and, once resolved, the verdict. */
val Interaction.resolutionJson: JSONObject? get() = resolution?.let(::JSONObject)

/** [Interaction.references] parsed: the turn's workflow references. */
val Interaction.referencesJson: JSONObject? get() = references?.let(::JSONObject)

/** [InteractionRequest.args] parsed: the tool call's arguments. */
val InteractionRequest.argsJson: JSONObject? get() = args?.let(::JSONObject)
