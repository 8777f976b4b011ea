"""mcl.feedback"""
