"""mcl.codegen"""
