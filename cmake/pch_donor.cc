// Compiled only so that its target's precompiled header is built for the others to reuse
// (cmake/pch.cmake); it holds no code.
